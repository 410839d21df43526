"""``kill -9`` of ``fastagent invoke --session s1`` during a slow tool call, then the same session
again: the record reopens, the dangling call gets an error result, and the next turn completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from fastagent_cli.sessions.record import INTERRUPTED_TOOL_TEXT
from tests.conftest import AgentFactory, RunCli, cli_command, find_record, record_file

SLOW_TOOL = '''
import asyncio

from fastagent_cli import define_tool


async def slow(seconds: float) -> str:
    """Wait for a while."""
    await asyncio.sleep(seconds)
    return "finished waiting"


tool = define_tool(slow)
'''

SCRIPT = {
    "rules": [
        {"match": "start", "steps": [{"toolCalls": [{"name": "slow", "args": {"seconds": 60}}]}, "never"]},
        {"match": "again", "steps": [{"text": "resumed after the crash"}]},
    ]
}


def wait_for(predicate: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def test_kill_9_mid_tool_then_resume(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent(
        {"tools/slow.py": SLOW_TOOL, "scripts/crash.json": json.dumps(SCRIPT)}, model="scripted/crash"
    )
    sessions = agent / ".fastagent" / "sessions"
    proc = subprocess.Popen(
        [*cli_command(), "invoke", "start", str(agent), "--session", "s1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: (found := find_record(sessions, "s1")) is not None and '"toolCall"' in found.read_text()
        )
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    done = run_cli("invoke", "again", str(agent), "--session", "s1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "resumed after the crash\n"

    entries = [json.loads(line) for line in record_file(sessions, "s1").read_text().splitlines()]
    messages = [e["message"] for e in entries if e["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "user", "assistant"]
    repaired = messages[2]
    assert repaired["isError"] is True and repaired["toolName"] == "slow"
    assert repaired["content"][0]["text"] == INTERRUPTED_TOOL_TEXT
    assert repaired["details"] == {"fastagent": "interrupted-tool-call"}
    ids = [e["id"] for e in entries[1:]]
    parents = [e["parentId"] for e in entries[1:]]
    assert parents == [None, *ids[:-1]], "the record is one unbroken chain"
