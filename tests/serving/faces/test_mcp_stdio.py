"""``fastagent mcp [dir]``: the real process launched by the ``mcp`` SDK's own stdio client, as
Claude Code and Claude Desktop launch it (and driven by hand for the wire's edges)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import AgentFactory, cli_command
from tests.serving.faces.agents import face_agent, sleepers, wait_until


@pytest.fixture
def agent(make_agent: AgentFactory) -> Path:
    return face_agent(make_agent, "")


def _params(agent: Path, *extra: str) -> StdioServerParameters:
    command, *args = cli_command()
    return StdioServerParameters(command=command, args=[*args, "mcp", str(agent), *extra])


async def test_ask_over_stdio_streams_progress_and_continues_its_session(agent: Path) -> None:
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with Client(stdio_client(_params(agent))) as client:
        assert client.server_info is not None and client.server_info.name == "agent"
        assert [t.name for t in (await client.list_tools()).tools] == ["ask"]
        first = await client.call_tool("ask", {"message": "use a tool"}, progress_callback=on_progress)
        assert first.is_error is False and first.structured_content is not None
        assert first.structured_content["text"] == "turn 1: use a tool"
        assert progress == ["running tool bash", "tool done", "thinking", "answering"]
        session = first.structured_content["session"]
        again = await client.call_tool("ask", {"message": "more", "session": session})
        assert again.structured_content == {"session": session, "text": "turn 2: more"}
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["release-notes"]
        resources = (await client.list_resources()).resources
        assert [(r.uri, r.title) for r in resources] == [(f"fastagent://session/{session}", "use a tool")]
        transcript = (await client.read_resource(resources[0].uri)).contents[0]
        assert getattr(transcript, "text", "").split("\n## ")[1:] == [
            "user\n\nuse a tool\n",
            "assistant\n\n(called: bash)\n\n> tool bash ok: tool-ran\n",
            "assistant\n\nturn 1: use a tool\n",
            "user\n\nmore\n",
            "assistant\n\nturn 2: more\n",
        ]
        with pytest.raises(MCPError) as missing:
            await client.read_resource("fastagent://session/nope")
        assert missing.value.code == -32002
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("nope")
        assert unknown.value.code == -32602


async def test_a_call_cancelled_over_stdio_aborts_its_turn(agent: Path) -> None:
    before = sleepers()
    async with Client(stdio_client(_params(agent))) as client:
        with pytest.raises(MCPError):
            await client.call_tool("ask", {"message": "sleep", "session": "c1"}, read_timeout_seconds=1.5)
        assert await wait_until(lambda: sleepers() <= before, 5), (
            "the cancelled turn's command is still running"
        )
        after = await client.call_tool("ask", {"message": "hello", "session": "c1"})
        assert after.is_error is False


def _exchange(agent: Path, lines: list[str]) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    done = subprocess.run(
        [*cli_command(), "mcp", str(agent)],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=30,
    )
    return [json.loads(line) for line in done.stdout.splitlines()], done


def test_stdout_carries_protocol_lines_only_and_eof_ends_the_process(agent: Path) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05"}}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {"message": "use a tool"}},
    }
    replies, done = _exchange(
        agent,
        [
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}),
            json.dumps(init),
            "not json",
            json.dumps(call),
        ],
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    by_id = {r.get("id"): r for r in replies}
    assert by_id[0]["error"]["code"] == -32600  # before initialize
    assert by_id[1]["result"]["protocolVersion"] == "2024-11-05"
    assert by_id[None]["error"]["code"] == -32700
    # the bash tool printed "tool-ran": it went to the tool result, never onto stdout
    assert by_id[2]["result"]["structuredContent"]["text"] == "turn 1: use a tool"
    assert len(replies) == 4


def test_a_missing_model_is_one_line_on_stderr(make_agent: AgentFactory) -> None:
    bare = make_agent({}, model=None, name="bare")
    done = subprocess.run(
        [*cli_command(), "mcp", str(bare)],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "HOME": str(bare), "PYTHONPATH": ":".join(sys.path)},
    )
    assert done.returncode != 0
    assert done.stdout == ""
    assert "Traceback" not in done.stderr and "Error:" in done.stderr
