"""MCP stdio servers as tools: listing, calls through the engine, errors as results, restarts,
start-up failures as diagnostics, clean shutdown. The server is ``mcp_test_server.py`` (the
``mcp`` SDK's ``MCPServer`` over stdio, started with ``sys.executable``)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import AgentEvent, Completed, ToolEnded, ToolStarted
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.tools.base import Tool, ToolContext
from fastagent_cli.tools.mcp import McpToolSource
from fastagent_cli.tools.mcp_config import McpServerConfig
from tests.conformance.suite import drain

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))


def demo(*extra: str, **settings: Any) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[SERVER, *extra], **settings)


SourceFactory = Callable[..., McpToolSource]


@pytest.fixture
async def make_source(tmp_path: Path) -> AsyncIterator[SourceFactory]:
    made: list[McpToolSource] = []

    def make(servers: dict[str, McpServerConfig] | None = None) -> McpToolSource:
        source = McpToolSource(servers if servers is not None else {"demo": demo()}, tmp_path)
        made.append(source)
        return source

    yield make
    for source in made:
        await source.aclose()


def pid_of(text: str) -> int:
    match = re.search(r"pid=(\d+)", text)
    assert match, text
    return int(match.group(1))


async def reaped(pid: int, within: float = 10.0) -> bool:
    """True once ``pid`` no longer exists at all (a zombie still answers ``kill(pid, 0)``)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.05)
    return False


async def call(tools: list[Tool], name: str, **args: Any) -> tuple[bool, str]:
    tool = next(t for t in tools if t.name == name)
    result = await tool.execute(args, ToolContext(cwd="."))
    text = "".join(b["text"] for b in result.content if b["type"] == "text")
    return result.is_error, text


def tool_ends(events: list[AgentEvent]) -> list[ToolEnded]:
    return [e for e in events if isinstance(e, ToolEnded)]


async def test_tools_are_listed_with_their_schemas(make_source: SourceFactory) -> None:
    tools = await make_source().tools()
    assert sorted(t.name for t in tools) == [
        "demo__add",
        "demo__catalog",
        "demo__crash",
        "demo__nap",
        "demo__price",
        "demo__refuse",
        "demo__whoami",
    ]
    add = next(t for t in tools if t.name == "demo__add")
    assert add.description == "Add two integers."
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert add.parameters["required"] == ["a", "b"]
    assert add.source == "mcp:demo"


async def test_the_scripted_model_calls_mcp_tools_through_the_engine(make_source: SourceFactory) -> None:
    tools = await make_source().tools()
    model = ScriptedModel.from_script(
        [
            {
                "toolCalls": [
                    {"name": "demo__add", "args": {"a": 2, "b": 40}},
                    {"name": "demo__refuse", "args": {"reason": "no"}},
                ]
            },
            "The sum is 42.",
        ]
    )
    agent = create_agent(model=model, tools=tools)
    events = await drain(agent.invoke("s", "add them"))
    assert isinstance(events[-1], Completed)
    # the two calls run concurrently, so they may end in either order: match them by call id
    names = {e.id: e.name for e in events if isinstance(e, ToolStarted)}
    ended = {names[e.id]: e for e in tool_ends(events)}
    added, refused = ended["demo__add"], ended["demo__refuse"]
    assert (added.is_error, added.content) == (False, [{"type": "text", "text": "42"}])
    assert refused.is_error and "refused: no" in refused.content[0]["text"]


async def test_errors_are_error_results(make_source: SourceFactory) -> None:
    tools = await make_source().tools()
    failed, text = await call(tools, "demo__add", a="not a number", b=1)
    assert failed and "validation error" in text
    failed, text = await call(tools, "demo__refuse", reason="policy")
    assert failed and text.endswith("refused: policy")


async def test_killed_server_is_restarted_for_the_next_turn(make_source: SourceFactory) -> None:
    source = make_source()
    model = ScriptedModel.from_script([{"toolCalls": [{"name": "demo__whoami", "args": {}}]}, "ok"])
    agent = create_agent(model=model, tools=await source.tools())
    first = tool_ends(await drain(agent.invoke("s", "who?")))
    assert not first[0].is_error
    old_pid = pid_of(first[0].content[0]["text"])
    os.kill(old_pid, signal.SIGKILL)
    assert await reaped(old_pid), "the dead server was left as a zombie"
    second = tool_ends(await drain(agent.invoke("s", "who now?")))
    assert not second[0].is_error, second[0].content
    new_pid = pid_of(second[0].content[0]["text"])
    assert new_pid != old_pid
    assert source.servers[0].starts == 2


async def test_a_server_killed_just_before_a_call_is_restarted_and_the_call_made(
    make_source: SourceFactory,
) -> None:
    source = make_source()
    tools = await source.tools()
    old_pid = pid_of((await call(tools, "demo__whoami"))[1])
    os.kill(old_pid, signal.SIGKILL)  # no await in between: the death is not noticed yet
    failed, text = await call(tools, "demo__whoami")
    assert not failed, text
    assert pid_of(text) != old_pid
    assert await reaped(old_pid)


async def test_a_server_dying_during_a_call_is_an_error_then_restarts(make_source: SourceFactory) -> None:
    tools = await make_source().tools()
    failed, text = await call(tools, "demo__crash")
    assert failed and text == "MCP server demo exited during the call; it will be restarted on the next call"
    assert await call(tools, "demo__add", a=1, b=2) == (False, "3")


async def test_a_missing_command_is_a_diagnostic_and_others_keep_working(make_source: SourceFactory) -> None:
    source = make_source({"ghost": McpServerConfig(command="fastagent-no-such-command"), "demo": demo()})
    tools = await source.tools()
    assert {t.name.split("__")[0] for t in tools} == {"demo"}
    assert source.diagnostics() == [
        'mcp server "ghost": cannot start: command not found: fastagent-no-such-command'
    ]
    assert await call(tools, "demo__add", a=1, b=1) == (False, "2")
    assert [t.name for t in await source.tools()] == [t.name for t in tools]
    assert source.servers[0].starts == 1, "a failed server is not retried on every turn"


async def test_a_failed_server_is_tried_again_later(
    make_source: SourceFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import fastagent_cli.tools.mcp as mcp_package

    monkeypatch.setattr(mcp_package, "RETRY_START_S", 0.0)
    late = tmp_path / "late_server.py"
    source = make_source({"late": McpServerConfig(command=sys.executable, args=[str(late)])})
    assert await source.tools() == [] and len(source.diagnostics()) == 1
    late.write_text(Path(SERVER).read_text(encoding="utf-8"), encoding="utf-8")
    tools = await source.tools()
    assert "late__add" in [t.name for t in tools]
    assert source.diagnostics() == []


async def test_a_server_that_exits_at_start_names_its_stderr(make_source: SourceFactory) -> None:
    source = make_source({"broken": demo("--fail-at-start")})
    assert await source.tools() == []
    (line,) = source.diagnostics()
    assert line.startswith('mcp server "broken": cannot start: ')
    assert "boom: this server refuses to start" in line


async def test_env_and_cwd(make_source: SourceFactory, tmp_path: Path) -> None:
    (tmp_path / "srv").mkdir()
    tools = await make_source({"demo": demo(env={"GREETING": "hello"}, cwd="srv")}).tools()
    failed, text = await call(tools, "demo__whoami")
    assert not failed
    assert f"cwd={tmp_path / 'srv'}" in text and "greeting=hello" in text


async def test_a_cancelled_call_leaves_the_server_usable(make_source: SourceFactory) -> None:
    tools = await make_source().tools()
    started = time.monotonic()
    nap = asyncio.create_task(call(tools, "demo__nap", seconds=60))
    await asyncio.sleep(0.3)
    nap.cancel()
    with pytest.raises(asyncio.CancelledError):
        await nap
    assert time.monotonic() - started < 10
    assert await call(tools, "demo__add", a=20, b=22) == (False, "42")


async def test_aclose_stops_the_server_process(make_source: SourceFactory) -> None:
    source = make_source()
    tools = await source.tools()
    pid = pid_of((await call(tools, "demo__whoami"))[1])
    busy = asyncio.create_task(call(tools, "demo__nap", seconds=60))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    await source.aclose()
    assert time.monotonic() - started < 10
    assert await reaped(pid, within=2.0)
    assert (await busy)[0] is True  # the call in flight ends as an error, not a hang
    failed, text = await call(tools, "demo__add", a=1, b=1)
    assert failed and "not running" in text


def test_no_task_destroyed_warning_or_leftover_process_in_a_real_process(tmp_path: Path) -> None:
    script = f"""
import asyncio, sys
from fastagent_cli.tools.mcp_config import McpServerConfig
from fastagent_cli.tools.mcp import McpToolSource
from fastagent_cli.tools.base import ToolContext

async def main():
    source = McpToolSource({{"demo": McpServerConfig(command=sys.executable, args=[{SERVER!r}])}}, ".")
    tools = {{t.name: t for t in await source.tools()}}
    result = await tools["demo__whoami"].execute({{}}, ToolContext(cwd="."))
    print(result.content[0]["text"])
    await source.aclose()

asyncio.run(main())
"""
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c", script],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Task was destroyed" not in done.stderr and "Warning" not in done.stderr, done.stderr
    pid = pid_of(done.stdout)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
