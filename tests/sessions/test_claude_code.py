"""Claude Code session files (``claude_code_sessions = true``): the records match real Claude Code
records (``fixtures/claude_code_2_1_284.jsonl``), the chain is whole, an existing file is never
rewritten, and the file stays valid when the process is killed with SIGKILL mid-run."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import OpenedAgent, open_agent_dir
from fastagent_cli.contract import Completed, Scope
from fastagent_cli.control import Notice, SessionUpdate
from fastagent_cli.sessions.claude_code import munge_cwd
from tests.conformance.suite import drain
from tests.conftest import AgentFactory, cli_command
from tests.engine.test_notices import Sink

FIXTURE = Path(__file__).with_name("fixtures") / "claude_code_2_1_284.jsonl"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
# Keys real records carry that depend on Claude Code's own features (how a prompt was typed, its
# permission mode, its Bash tool's result object, the API's cache breakdown, why a queued
# message left the queue, who queued it): fastagent has no such thing to say.
CLAUDE_ONLY = {"promptSource", "permissionMode", "cache_creation", "service_tier", "reason", "origin"}

MODEL = """
def reply(request):
    text = request.last_user_text
    if "notice" in text:
        return "Noted."
    if request.round == 0:
        calls = [{"name": "probe", "args": {}}]
        return {"thinking": "Check first.", "text": "Let me look.", "toolCalls": calls}
    if "slow" in text and request.round == 1:
        return {"toolCalls": [{"name": "probe", "args": {"wait": 30}}]}
    return "All good."
"""

PROBE = '''
import time

from fastagent_cli.tools.define import tool


@tool
def probe(wait: float = 0) -> str:
    """Probe, slowly if asked."""
    time.sleep(wait)
    return "probe ok"
'''


def kind(record: dict[str, Any]) -> str:
    """What a record is, finely enough to pair it with its fixture twin."""
    t = record["type"]
    if t == "assistant":
        return f"assistant:{record['message']['content'][0]['type']}"
    if t == "user":
        content = record["message"]["content"]
        if record.get("isCompactSummary"):
            return "user:compact-summary"
        return "user:tool_result" if isinstance(content, list) else "user:prompt"
    if t == "queue-operation":
        return f"queue:{record['operation']}"
    if t == "attachment":
        return f"attachment:{record['attachment']['type']}"
    if t == "system":
        return f"system:{record['subtype']}"
    return str(t)


def shape(value: Any) -> Any:
    """Keys and value types, recursively, without the keys only Claude Code has."""
    if isinstance(value, dict):  # a tool's input is the tool's own business: only its type counts
        return {k: "object" if k == "input" else shape(v) for k, v in value.items() if k not in CLAUDE_ONLY}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    if value is None:
        return "null-or-str"
    return "null-or-str" if isinstance(value, str) else type(value).__name__


def transcript(home: Path, cwd: Path) -> list[Path]:
    return sorted((home / "projects" / munge_cwd(str(cwd))).glob("*.jsonl"))


def check_chain(records: list[dict[str, Any]], path: Path) -> None:
    seen: set[str] = set()
    for record in records:
        if record["type"] in ("queue-operation", "custom-title"):
            assert record["sessionId"] == path.stem
            continue
        assert UUID.match(record["uuid"]) and STAMP.match(record["timestamp"]), record
        assert record["sessionId"] == path.stem and record["userType"] == "external"
        parent = record["parentUuid"]
        assert parent is None or parent in seen, f"{record['uuid']} hangs under an unknown {parent}"
        seen.add(record["uuid"])


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    return home


@pytest.fixture
async def opened(make_agent: AgentFactory, claude_home: Path) -> AsyncIterator[OpenedAgent]:
    root = make_agent(
        {"cc_model.py": MODEL, "tools/probe.py": PROBE},
        model="scripted/cc_model:reply",
        config=(
            "coding_tools = false\nclaude_code_sessions = true\nsession_control = true\n"
            "[compaction]\nkeep_recent_tokens = 1\n"
        ),
    )
    agent = open_agent_dir(root)
    try:
        yield agent
    finally:
        await agent.aclose()


async def test_records_have_the_shape_of_real_claude_code_records(
    opened: OpenedAgent, claude_home: Path
) -> None:
    assert isinstance((await drain(opened.agent.invoke(Scope("cc"), "hello")))[-1], Completed)
    inbox = opened.inbox(Sink())
    inbox.post("cc", Notice("mcp:files", "a notice arrived"))
    await asyncio.wait_for(inbox.drain(), 10)
    session = opened.control.sessions.get("cc")
    assert (await session.update(SessionUpdate(name="Probe chat"))).ok
    compacting = await session.compact()
    assert compacting.ok, compacting
    for _ in range(200):
        if (await session.state()).status == "idle":
            break
        await asyncio.sleep(0.05)

    files = transcript(claude_home, opened.workspace)
    assert len(files) == 1
    path = files[0]
    assert UUID.match(path.stem) and oct(path.stat().st_mode & 0o777) == "0o600"
    mine = [json.loads(line) for line in path.read_text().splitlines()]
    check_chain(mine, path)
    assert [kind(r) for r in mine] == [
        "user:prompt",
        "assistant:thinking",
        "assistant:text",
        "assistant:tool_use",
        "user:tool_result",
        "assistant:text",
        "queue:enqueue",
        "queue:remove",
        "attachment:queued_command",
        "assistant:text",
        "custom-title",
        "system:compact_boundary",
        "user:compact-summary",
    ]
    real = {kind(r): r for r in (json.loads(line) for line in FIXTURE.read_text().splitlines())}
    for record in mine:
        twin = real[kind(record)]
        mine_shape, real_shape = shape(record), shape(twin)
        if kind(record) == "user:tool_result":  # Claude Code's toolUseResult is its own tool's object
            mine_shape.pop("toolUseResult")
            real_shape.pop("toolUseResult")
        assert mine_shape == real_shape, kind(record)
        assert list(record) == [k for k in twin if k not in CLAUDE_ONLY], kind(record)  # and key order

    # what a reader of the conversation sees
    assert mine[0]["message"]["content"] == "hello"
    assistant_ids = {r["message"]["id"] for r in mine[1:4]}
    assert len(assistant_ids) == 1 and {r["requestId"] for r in mine[1:4]} == {
        f"req_{mine[1]['message']['id'][4:]}"
    }
    assert mine[3]["message"]["stop_reason"] == "tool_use" and mine[5]["message"]["stop_reason"] == "end_turn"
    call = mine[3]["message"]["content"][0]
    result = mine[4]["message"]["content"][0]
    assert (call["name"], result["tool_use_id"], result["content"]) == ("probe", call["id"], "probe ok")
    assert mine[4]["sourceToolAssistantUUID"] == mine[3]["uuid"]
    assert mine[6]["content"] == mine[8]["attachment"]["prompt"]
    assert "a notice arrived" in mine[8]["attachment"]["prompt"]
    assert mine[8]["attachment"]["commandMode"] == "task-notification"
    assert mine[9]["parentUuid"] == mine[8]["uuid"]
    assert mine[10]["customTitle"] == "Probe chat"
    assert mine[11]["parentUuid"] is None and mine[11]["logicalParentUuid"] == mine[9]["uuid"]
    assert mine[12]["parentUuid"] == mine[11]["uuid"]
    assert mine[12]["message"]["content"].startswith("This session is being continued from a previous")


async def test_an_existing_file_is_appended_to_never_rewritten(
    opened: OpenedAgent, claude_home: Path
) -> None:
    await drain(opened.agent.invoke(Scope("keep"), "first"))
    (path,) = transcript(claude_home, opened.workspace)
    before = path.read_bytes()
    await drain(opened.agent.invoke(Scope("keep"), "second"))
    after = path.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    records = [json.loads(line) for line in after.splitlines()]
    check_chain(records, path)
    assert len({r["uuid"] for r in records if "uuid" in r}) == len([r for r in records if "uuid" in r])

    # a torn last line (a writer killed mid-write) is left exactly as it is: a new file takes over
    with path.open("ab") as torn:
        torn.write(b'{"parentUuid":"x","type":"user","mess')
    torn_bytes = path.read_bytes()
    await drain(opened.agent.invoke(Scope("keep"), "third"))
    assert path.read_bytes() == torn_bytes
    files = transcript(claude_home, opened.workspace)
    assert len(files) == 2
    newer = next(p for p in files if p != path)
    records = [json.loads(line) for line in newer.read_text().splitlines()]
    check_chain(records, newer)
    prompts = [r["message"]["content"] for r in records if kind(r) == "user:prompt"]
    assert prompts == ["first", "second", "third"]  # backfilled whole: the conversation is all there


def test_the_file_is_valid_after_a_kill_9_and_the_next_run_completes_it(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    home = tmp_path / "claude-config"
    root = make_agent(
        {"cc_model.py": MODEL, "tools/probe.py": PROBE},
        model="scripted/cc_model:reply",
        config="coding_tools = false\nclaude_code_sessions = true\n",
    )
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(home)}
    process = subprocess.Popen(
        [*cli_command(), "invoke", "slow work", str(root), "--session", "k9"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    directory = home / "projects" / munge_cwd(str(root))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until the slow tool call is recorded
        files = list(directory.glob("*.jsonl")) if directory.exists() else []
        if files and files[0].read_text().count("tool_use_id") == 1 and '"wait":30' in files[0].read_text():
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    (path,) = directory.glob("*.jsonl")
    data = path.read_bytes()
    assert data.endswith(b"\n")
    records = [json.loads(line) for line in data.splitlines()]  # every line is whole JSON
    check_chain(records, path)
    assert kind(records[-1]) == "assistant:tool_use"  # the slow call, its result never came
    slow_call = records[-1]["message"]["content"][0]["id"]

    done = subprocess.run(
        [*cli_command(), "invoke", "again", str(root), "--session", "k9"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    after = path.read_bytes()
    assert after.startswith(data)
    records = [json.loads(line) for line in after.splitlines()]
    check_chain(records, path)
    # the interrupted call got its (error) result, then the new prompt and its answer
    (interrupted,) = [
        r["message"]["content"][0] for r in records if kind(r) == "user:tool_result" and slow_call in str(r)
    ]
    assert interrupted["is_error"] is True
    assert [r["message"]["content"] for r in records if kind(r) == "user:prompt"] == ["slow work", "again"]
