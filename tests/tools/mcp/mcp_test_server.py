"""A small MCP stdio server for the tests, built with the ``mcp`` SDK (``MCPServer``, the 2.x
name of FastMCP). Run as ``python mcp_test_server.py [--fail-at-start]``.

Besides its tools it serves the resource ``note://current``: the file ``NOTE_FILE`` names (its
text; ``(no note)`` while it does not exist). A client may subscribe to it
on either wire: ``subscriptions/listen`` on the 2026-07-28 wire a current client negotiates, or
``resources/subscribe`` (added to ``MCPServer`` by hand, which serves only the 2026 call) for a
client that opens with the ``initialize`` handshake. The server polls the file and announces
each change to every subscriber. (``mcp_2025_server.py`` is a server that knows only the older
wire.)"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ResourceUpdated

BUS = InMemorySubscriptionBus()


@asynccontextmanager
async def _polling(server: Any) -> AsyncIterator[None]:
    """Watch the note from the start (a 2026 listener subscribes without calling the server's code)."""
    _poller.append(asyncio.create_task(_poll_note()))
    yield


app = MCPServer("fastagent-test", subscriptions=BUS, lifespan=_polling)
NOTE_URI = "note://current"
_subscribers: dict[str, list[Any]] = {}
_poller: list[asyncio.Task[None]] = []


def _note_text() -> str:
    path = os.environ.get("NOTE_FILE")
    try:
        return Path(path).read_text() if path else "(no note)"
    except FileNotFoundError:
        return "(no note)"


@app.resource(NOTE_URI, mime_type="text/plain")
def note() -> str:
    """The current note."""
    return _note_text()


async def _poll_note() -> None:
    last = _note_text()
    while True:
        await asyncio.sleep(0.05)
        current = _note_text()
        if current != last:
            last = current
            for session in _subscribers.get(NOTE_URI, []):
                await session.send_resource_updated(NOTE_URI)
            await BUS.publish(ResourceUpdated(uri=NOTE_URI))


async def _subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    if params.uri != NOTE_URI:
        raise ToolError(f"no such resource: {params.uri}")
    _subscribers.setdefault(params.uri, []).append(ctx.session)
    return types.EmptyResult()


app._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, _subscribe)


@app.tool()
def catalog(category: str = "") -> dict[str, Any]:
    """The items of a category (all categories when empty), as structured content."""
    items = [
        {"id": f"{c}-{i}", "category": c, "price": i * 10 + len(c)}
        for c in ("fruit", "tools", "books")
        for i in range(1, 4)
    ]
    return {"items": [item for item in items if not category or item["category"] == category]}


@app.tool()
def price(item_id: str) -> float:
    """The price of one item; fails for an unknown id."""
    category, _, number = item_id.rpartition("-")
    if category not in ("fruit", "tools", "books") or number not in ("1", "2", "3"):
        raise ToolError(f"unknown item {item_id}")
    return int(number) * 10 + len(category) + 0.5


@app.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def whoami() -> str:
    """The server's process id and working directory, and the GREETING variable."""
    return f"pid={os.getpid()} cwd={os.getcwd()} greeting={os.environ.get('GREETING', '')}"


@app.tool()
def refuse(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@app.tool()
async def nap(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "rested"


@app.tool(annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True))
def crash() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


if __name__ == "__main__":
    if "--fail-at-start" in sys.argv:
        print("boom: this server refuses to start", file=sys.stderr, flush=True)
        sys.exit(2)
    app.run()
