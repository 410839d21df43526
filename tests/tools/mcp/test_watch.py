"""MCP resource watches against a real stdio server that updates a resource: each change is one
notice (debounced, deduplicated by content), and a change while fastagent was not running is
the notice queued at startup. Every test runs against a server of each kind: one on today's wire
(2026-07-28: ``subscriptions/listen``; it refuses ``resources/subscribe``) and an older one
(``resources/subscribe``, no ``server/discover``)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.control import Notice
from fastagent_cli.tools.mcp import McpToolSource
from fastagent_cli.tools.mcp_config import McpServerConfig
from tests.tools.mcp.test_mcp_tools import demo

URI = "note://current"
WIRES = {"2026": "2026-07-28", "2025": "2025-11-25"}


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> str:
    wire: str = request.param
    return wire


OLD_SERVER = str(Path(__file__).parent / "mcp_2025_server.py")


def server(wire: str, **settings: Any) -> McpServerConfig:
    """The test server of today's wire, or the one that speaks only the older wire."""
    if wire == "2026":
        return demo(**settings)
    return McpServerConfig(command=sys.executable, args=[OLD_SERVER], **settings)


def watching(tmp_path: Path, wire: str, debounce_ms: int = 1000) -> McpToolSource:
    env = {"NOTE_FILE": str(tmp_path / "note.txt")}
    config = server(wire, env=env, watch=[URI], watch_debounce_ms=debounce_ms)
    return McpToolSource({"notes": config}, tmp_path)


def negotiated(source: McpToolSource) -> str | None:
    connection = source.servers[0]._connection
    return connection.protocol_version if connection is not None else None


async def wait_for(notices: list[Notice], count: int, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while len(notices) < count and time.monotonic() < deadline:  # noqa: ASYNC110 (another process writes it)
        await asyncio.sleep(0.05)


async def test_each_change_of_a_watched_resource_is_one_notice(tmp_path: Path, wire: str) -> None:
    notices: list[Notice] = []
    state = tmp_path / "state" / "watch-state.json"
    state.parent.mkdir()
    source = watching(tmp_path, wire)
    try:
        assert await source.start_watches(notices.append, state) == []  # the first run only records
        assert negotiated(source) == WIRES[wire]
        assert json.loads(state.read_text())["digests"].keys() == {f"notes {URI}"}

        (tmp_path / "note.txt").write_text("buy milk")
        await wait_for(notices, 1)
        assert len(notices) == 1
        assert notices[0].source == "mcp:notes"
        assert notices[0].text.startswith(f"The resource {URI} (MCP server notes) changed. Now:")
        assert notices[0].text.endswith("buy milk")

        # a burst inside the debounce window ends on the content already delivered: nothing new
        (tmp_path / "note.txt").write_text("something else")
        await asyncio.sleep(0.2)  # well inside the 1 s window
        (tmp_path / "note.txt").write_text("buy milk")
        await asyncio.sleep(2.5)
        assert len(notices) == 1

        (tmp_path / "note.txt").write_text("buy bread")
        await wait_for(notices, 2)
        assert [n.text.rsplit("\n", 1)[-1] for n in notices] == ["buy milk", "buy bread"]
        assert source.diagnostics() == []
    finally:
        await source.aclose()

    # fastagent stops; the note changes; the next start reports it once, queued at startup
    (tmp_path / "note.txt").write_text("buy eggs")
    again: list[Notice] = []
    source = watching(tmp_path, wire)
    try:
        queued = await source.start_watches(again.append, state)
        assert [n.text for n in queued] == [
            f"The resource {URI} (MCP server notes) changed while fastagent was not running. Now:\nbuy eggs"
        ]
        await asyncio.sleep(0.5)
        assert again == []
    finally:
        await source.aclose()


async def test_a_resource_the_server_refuses_is_a_diagnostic(tmp_path: Path, wire: str) -> None:
    config = server(wire, watch=["note://missing"])
    source = McpToolSource({"notes": config}, tmp_path)
    try:
        assert await source.start_watches(lambda n: None, tmp_path / "watch-state.json") == []
        problems = source.diagnostics()
        # the older wire refuses the subscription; today's accepts any URI, and the read fails
        what = "cannot watch" if wire == "2025" else "cannot read"
        assert len(problems) == 1 and problems[0].startswith(f'mcp server "notes": {what} note://missing')
    finally:
        await source.aclose()


async def test_a_watch_begun_after_the_server_started_and_after_a_restart(tmp_path: Path, wire: str) -> None:
    notices: list[Notice] = []
    source = watching(tmp_path, wire, debounce_ms=100)
    try:
        assert await source.tools()  # a turn started the server before watching began
        await source.start_watches(notices.append, tmp_path / "watch-state.json")
        (tmp_path / "note.txt").write_text("first")
        await wait_for(notices, 1)
        assert [n.text.rsplit("\n", 1)[-1] for n in notices] == ["first"]

        # the server dies; the next use restarts it, and the watch goes on in the new process
        server = source.servers[0]
        crashed = await server.call("crash", {})
        assert crashed.is_error
        assert not (await server.call("add", {"a": 1, "b": 2})).is_error
        assert server.starts == 2 and negotiated(source) == WIRES[wire]
        (tmp_path / "note.txt").write_text("second")
        await wait_for(notices, 2)
        assert [n.text.rsplit("\n", 1)[-1] for n in notices] == ["first", "second"]
    finally:
        await source.aclose()
