"""The On Start section with the real ``fastagent`` processes: sent once when ``start`` / ``dev``
begin serving (session ``on-start``, recorded as a notice), never under ``invoke``, never again
on a ``dev`` reload; no section, no model request; a ``NO_REPLY`` answer is not delivered; a
watched MCP resource that changes becomes a notice turn while serving."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AgentFactory, RunCli
from tests.serving.serving_proc import ServerProcess, answer, invoke

# Every request the model receives is logged (one JSON line: the latest user-side text), so the
# tests can count requests across processes.
MODEL = """
import json
import os
import re


def turn_input(request):
    parts = []
    for message in reversed(request.messages):
        if message["role"] != "user":
            break
        content = message["content"]
        parts.append(content if isinstance(content, str) else " ".join(b.get("text", "") for b in content))
    return "\\n".join(reversed(parts))


def reply(request):
    text = turn_input(request)
    with open(os.environ["REQUEST_LOG"], "a") as log:
        log.write(json.dumps(text) + "\\n")
    if "stay quiet" in text:
        return "NO_REPLY"
    note = re.search(r"Now:\\n(.*)\\n</notice>", text)
    noted = f"Noted: {note.group(1)}" if note else ""
    if "Greet the team" in text:
        return " ".join(p for p in ("Good morning, team.", noted) if p)
    if noted:
        return noted
    return "echo " + text
"""

SERVER = str(Path(__file__).parents[1] / "tools" / "mcp" / "mcp_test_server.py")
FLAGS = ("--port", "0", "--bind", "127.0.0.1")


def requests(log: Path) -> list[str]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def notices(agent: Path) -> list[dict[str, Any]]:
    """Every notice entry recorded in any session file under the agent directory."""
    found = []
    for path in agent.rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("type") == "custom_message" and entry.get("customType") == "fastagent:notice":
                found.append(entry)
    return found


async def settle(log: Path, count: int, within: float = 20) -> None:
    deadline = time.monotonic() + within
    while len(requests(log)) < count and time.monotonic() < deadline:  # noqa: ASYNC110 (another process writes it)
        await asyncio.sleep(0.05)


@pytest.fixture
def request_log(tmp_path: Path) -> Path:
    return tmp_path / "requests.jsonl"


def make(make_agent: AgentFactory, persona: str, config: str = "") -> Path:
    return make_agent(
        {"model.py": MODEL, "persona.md": persona, "tools/probe.py": PROBE},
        model="scripted/model:reply",
        config="coding_tools = false\n" + config,
    )


PROBE = (
    "from fastagent_cli.tools.define import tool\n\n\n@tool\ndef probe() -> str:\n"
    '    """Probe."""\n    return "v1"\n'
)
ON_START = "You are a test agent.\n\n## On Start\nGreet the team.\n\n## Style\nBe brief.\n"


async def test_start_sends_the_section_once_as_a_notice_and_delivers_the_reply(
    make_agent: AgentFactory, request_log: Path
) -> None:
    agent = make(make_agent, ON_START)
    env = {"REQUEST_LOG": str(request_log)}
    async with ServerProcess.spawn("start", str(agent), *FLAGS, env=env) as server:
        await server.wait_for(r"on start: a notice to session on-start once serving begins")
        await server.wait_for(r"\[notice\] on-start reply: Good morning, team\.")
        port = await server.port()
        assert answer(await invoke(port, "other", "hello")) == "echo hello"
        await asyncio.sleep(0.5)
    assert requests(request_log) == [requests(request_log)[0], "hello"]
    assert "Greet the team." in requests(request_log)[0]
    recorded = notices(agent)
    assert len(recorded) == 1 and recorded[0]["details"] == {
        "source": "prompt:on-start",
        "text": "Greet the team.",
    }
    # recorded as a notice, never as a user message
    on_start = next(p for p in agent.rglob("*.jsonl") if "Greet the team" in p.read_text())
    lines = [json.loads(line) for line in on_start.read_text().splitlines()[1:]]
    assert not [e for e in lines if e.get("type") == "message" and e["message"]["role"] == "user"]
    # delivered once (the section leaving the system prompt: tests/definition/test_on_start.py)
    assert server.count(r"\[notice\] on-start reply") == 1


async def test_invoke_never_fires_it_and_no_section_means_no_request(
    make_agent: AgentFactory, request_log: Path, run_cli: RunCli
) -> None:
    agent = make(make_agent, ON_START)
    done = run_cli("invoke", "hi", str(agent), env={"REQUEST_LOG": str(request_log)})
    assert done.returncode == 0, done.stderr
    assert requests(request_log) == ["hi"] and notices(agent) == []

    quiet = make(make_agent, "You are a test agent without a start section.\n")
    quiet_log = request_log.with_name("quiet.jsonl")
    async with ServerProcess.spawn(
        "start", str(quiet), *FLAGS, env={"REQUEST_LOG": str(quiet_log)}
    ) as server:
        await server.port()
        await asyncio.sleep(1.5)
        assert server.count(r"on start") == 0
    assert requests(quiet_log) == [] and notices(quiet) == []


async def test_a_dev_reload_does_not_fire_it_again(make_agent: AgentFactory, request_log: Path) -> None:
    agent = make(make_agent, ON_START)
    async with ServerProcess.spawn("dev", str(agent), *FLAGS, env={"REQUEST_LOG": str(request_log)}) as dev:
        await dev.wait_for(r"\[notice\] on-start reply: Good morning, team\.")
        before = len(dev.lines)
        (agent / "tools" / "probe.py").write_text(PROBE.replace("v1", "v2"))
        await dev.wait_for(r"changed — restarting the dev worker", after=before)
        port = await dev.port(after=before)
        assert answer(await invoke(port, "x", "after reload")) == "echo after reload"
        await asyncio.sleep(1.0)
        assert dev.count(r"\[notice\] on-start reply") == 1
        assert dev.count(r"on start: a notice") == 1  # the reloaded worker does not announce it
    assert len(requests(request_log)) == 2 and len(notices(agent)) == 1


async def test_no_reply_is_kept_but_not_delivered(make_agent: AgentFactory, request_log: Path) -> None:
    agent = make(make_agent, "# On Start\nCheck the queue and stay quiet unless something is wrong.\n")
    async with ServerProcess.spawn(
        "start", str(agent), *FLAGS, env={"REQUEST_LOG": str(request_log)}
    ) as server:
        await server.wait_for(r"\[notice\] on-start ← prompt:on-start")
        await settle(request_log, 1)
        await asyncio.sleep(1.0)
        assert server.count(r"\[notice\] on-start reply") == 0, server.text
    session = next(p for p in agent.rglob("*.jsonl") if "stay quiet" in p.read_text())
    assert '"text":"NO_REPLY"' in session.read_text().replace(" ", "")  # kept in the session


async def test_a_watched_resource_change_is_folded_into_startup_then_runs_as_a_notice(
    make_agent: AgentFactory, request_log: Path, tmp_path: Path
) -> None:
    note = tmp_path / "note.txt"
    note.write_text("first note")
    server_table = (
        "[mcp_servers.notes]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(SERVER)}]\n"
        f"env = {{ NOTE_FILE = {json.dumps(str(note))} }}\n"
        'watch = ["note://current"]\n'
        "watch_debounce_ms = 100\n"
    )
    agent = make(make_agent, ON_START, server_table)
    env = {"REQUEST_LOG": str(request_log)}
    async with ServerProcess.spawn("start", str(agent), *FLAGS, env=env) as server:
        await server.wait_for(r"watching 1 MCP resource\(s\): notes note://current")
        await server.wait_for(r"\[notice\] on-start reply: Good morning")
        note.write_text("second note")
        await server.wait_for(r"\[notice\] on-start reply: Noted: second note")
    # stopped; the note changes; the next start folds the change into the one startup turn
    note.write_text("third note")
    async with ServerProcess.spawn("start", str(agent), *FLAGS, env=env) as server:
        await server.wait_for(r"\[notice\] on-start reply: Good morning, team\. Noted: third note")
        await asyncio.sleep(0.5)
    seen = requests(request_log)
    assert len(seen) == 3, seen  # startup with a queued change is one turn
    assert "second note" in seen[1]
    assert "Greet the team." in seen[2] and "third note" in seen[2]
    kinds = [n["details"]["source"] for n in notices(agent)]
    assert kinds == ["prompt:on-start", "mcp:notes", "prompt:on-start", "mcp:notes"]
    assert "changed while fastagent was not running" in notices(agent)[-1]["details"]["text"]
