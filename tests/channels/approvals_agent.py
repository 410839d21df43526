"""What the channel approval tests share: the deploy agent (a scripted model that calls the gated
``deploy`` tool once, then answers with the tool's result and logs it to ``$APPROVALS_LOG``; or,
``TWO_CALLS``, twice in one batch), and a ``start`` that is killed (SIGKILL) once a request was
asked."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TypeVar

from tests.serving.serving_proc import ServerProcess

T = TypeVar("T")

MODEL = """
import os


def reply(request):
    if request.round == 0:
        return {"toolCalls": [{"name": "deploy", "args": {"env": "prod"}}]}
    last = request.messages[-1]
    result = "".join(b.get("text", "") for b in last["content"])
    if os.environ.get("APPROVALS_LOG"):
        with open(os.environ["APPROVALS_LOG"], "a", encoding="utf-8") as log:
            log.write(result + "\\n")
    return "result: " + result
"""
TWO_CALLS = """
# two gated calls in one batch; then every result of the batch, in order, to $APPROVALS_LOG
import os


def reply(request):
    if request.round == 0:
        calls = [{"name": "deploy", "args": {"env": "prod"}}, {"name": "deploy", "args": {"env": "staging"}}]
        return {"toolCalls": calls}
    results = []
    for message in reversed(request.messages):
        if message["role"] != "toolResult":
            break
        results.insert(0, "".join(b.get("text", "") for b in message["content"]))
    with open(os.environ["APPROVALS_LOG"], "a", encoding="utf-8") as log:
        log.write(" | ".join(results) + "\\n")
    return "results: " + " | ".join(results)
"""
DEPLOY = '''
from fastagent_cli import tool


@tool(approval=True)
def deploy(env: str) -> str:
    """Deploy."""
    return f"deployed {env}"
'''


def write_agent(root: Path, files: Mapping[str, str], *, config: str = "") -> None:
    """The deploy agent in ``root``, with ``files`` (the channel module, ``.env``...) and more
    ``fastagent.toml`` (``config``)."""
    toml = 'model = "scripted/apmodel:reply"\ncoding_tools = false\n' + config
    for rel, text in {
        "fastagent.toml": toml,
        "apmodel.py": MODEL,
        "tools/deploy.py": DEPLOY,
        **files,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def start_args(root: Path) -> tuple[str, ...]:
    return ("start", str(root), "--port", "0", "--bind", "127.0.0.1")


async def asked_then_killed(
    root: Path, env: Mapping[str, str], ask: Callable[[ServerProcess, int], Awaitable[T]]
) -> T:
    """Run ``start`` on ``root``, ``ask(server, port)`` (it returns once the request was posted),
    then SIGKILL the process and wait for it: what ``ask`` returned."""
    async with ServerProcess.spawn(*start_args(root), env=dict(env)) as first:
        asked = await ask(first, await first.port())
        first.send(signal.SIGKILL)
        await first.wait()
    return asked
