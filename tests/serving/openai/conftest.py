"""A real ``fastagent start`` with ``[http] openai = true`` on a probe model that answers with
what it was sent (the system prompt's persona marker, the messages it sees)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AgentFactory
from tests.serving.serving_proc import ServerProcess

PROBE = """
import json


def respond(request):
    text = request.last_user_text
    if "think" in text:
        return {"thinking": "pondering deeply", "text": "thought done", "usage": {"input": 11, "output": 3}}
    if "slow" in text:
        return {"text": "slow answer", "delayMs": 4000}
    if "reject" in text:
        return {"error": {"status": 401, "message": "bad key"}}
    if "use a tool" in text:
        if request.round == 0:
            return {"toolCalls": [{"name": "bash", "args": {"command": "echo tool-ran"}}]}
        return "the tool said " + request.messages[-1]["content"][0]["text"].strip()
    if "sleep long" in text:
        if request.round == 0:
            return {"toolCalls": [{"name": "bash", "args": {"command": "sleep 30"}}]}
        return "woke"
    if "break later" in text:
        if request.round == 0:
            return {"toolCalls": [{"name": "bash", "args": {"command": "true"}}]}
        return {"error": {"status": 400, "message": "the model broke mid-turn"}}
    seen = []
    for message in request.messages:
        content = message["content"]
        parts = [content] if isinstance(content, str) else [
            block.get("text", "<%s %s>" % (block["type"], block.get("mimeType", ""))) for block in content
        ]
        seen.append(message["role"] + ": " + " | ".join(parts))
    return {"text": json.dumps({"persona": "PERSONA-MARK" in request.system, "seen": seen}),
            "usage": {"input": 20, "output": 5}}
"""

CONFIG = 'name = "helper"\n\n[http]\nopenai = true\n'

Spawn = Callable[..., contextlib.AbstractAsyncContextManager[tuple[ServerProcess, str]]]


@pytest.fixture
def probe_agent(make_agent: AgentFactory) -> Path:
    return make_agent(
        {"probe.py": PROBE, "persona.md": "You are the helper. PERSONA-MARK\n"},
        model="scripted/probe:respond",
        config=CONFIG,
    )


@pytest.fixture
def serve_probe(probe_agent: Path) -> Spawn:
    """``async with serve_probe() as (server, base_url): ...`` (``base_url`` ends in ``/v1``)."""

    @contextlib.asynccontextmanager
    async def spawn(
        *args: str, env: Mapping[str, str] | None = None, **kw: Any
    ) -> AsyncIterator[tuple[ServerProcess, str]]:
        argv = ("start", str(probe_agent), "--port", "0", *(args or ("--bind", "127.0.0.1")))
        async with ServerProcess.spawn(*argv, env=env, **kw) as server:
            port = await server.port()
            yield server, f"http://127.0.0.1:{port}/v1"

    return spawn
