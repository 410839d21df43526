"""MCP resource watches against a real stdio server that updates a resource: each change is one
notice (debounced, deduplicated by content), and a change while fastagent was not running is
the notice queued at startup."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from fastagent_cli.control import Notice
from fastagent_cli.tools.mcp import McpToolSource
from tests.tools.mcp.test_mcp_tools import demo

URI = "note://current"


def watching(tmp_path: Path, debounce_ms: int = 1000) -> McpToolSource:
    config = demo(env={"NOTE_FILE": str(tmp_path / "note.txt")}, watch=[URI], watch_debounce_ms=debounce_ms)
    return McpToolSource({"notes": config}, tmp_path)


async def wait_for(notices: list[Notice], count: int, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while len(notices) < count and time.monotonic() < deadline:  # noqa: ASYNC110 (another process writes it)
        await asyncio.sleep(0.05)


async def test_each_change_of_a_watched_resource_is_one_notice(tmp_path: Path) -> None:
    notices: list[Notice] = []
    state = tmp_path / "state" / "watch-state.json"
    state.parent.mkdir()
    source = watching(tmp_path)
    try:
        assert await source.start_watches(notices.append, state) == []  # the first run only records
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
    source = watching(tmp_path)
    try:
        queued = await source.start_watches(again.append, state)
        assert [n.text for n in queued] == [
            f"The resource {URI} (MCP server notes) changed while fastagent was not running. Now:\nbuy eggs"
        ]
        await asyncio.sleep(0.5)
        assert again == []
    finally:
        await source.aclose()


async def test_a_resource_the_server_refuses_is_a_diagnostic(tmp_path: Path) -> None:
    config = demo(watch=["note://missing"])
    source = McpToolSource({"notes": config}, tmp_path)
    try:
        assert await source.start_watches(lambda n: None, tmp_path / "watch-state.json") == []
        problems = source.diagnostics()
        assert len(problems) == 1 and problems[0].startswith(
            'mcp server "notes": cannot watch note://missing'
        )
    finally:
        await source.aclose()
