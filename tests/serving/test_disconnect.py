"""A client that goes away mid-stream cancels the turn promptly, even while the agent is silent."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
from aiohttp import web

from fastagent_cli.contract import Completed, Text, ToolStarted, event_from_wire
from fastagent_cli.serving.host import serve
from fastagent_cli.serving.invoke_http import create_invoke_handler
from fastagent_cli.sessions.store import FileSessionStore
from tests.serving.conftest import (
    FakeAgent,
    SlowTool,
    StartServer,
    real_agent,
    session_lines,
    slow_tool_script,
    sse_events,
)


async def read_event(resp: aiohttp.ClientResponse) -> object:
    while True:
        line = await asyncio.wait_for(resp.content.readline(), 10)
        assert line, "stream ended early"
        if line.startswith(b"data: "):
            return event_from_wire(line[6:].decode().strip())


async def test_disconnect_during_a_slow_tool_cancels_the_turn_and_frees_the_session(
    tmp_path: Path, start_server: StartServer
) -> None:
    slow = SlowTool()
    agent = real_agent(tmp_path, slow_tool_script(), [slow.build()])
    base = await start_server(create_invoke_handler(agent))
    try:
        async with aiohttp.ClientSession() as client:
            resp = await client.post(f"{base}/invoke", json={"session": "d1", "text": "slow job"})
            assert isinstance(await read_event(resp), ToolStarted)
            await asyncio.wait_for(slow.started.wait(), 10)
            left = time.monotonic()
            resp.close()  # the client goes away while the tool is silent
        await asyncio.wait_for(slow.cancelled.wait(), 5)
        assert time.monotonic() - left < 3.0

        # The lease is released: the next request on that session runs a whole turn.
        async with (
            aiohttp.ClientSession() as client,
            client.post(f"{base}/invoke", json={"session": "d1", "text": "hello"}) as again,
        ):
            events = sse_events(await again.text())
        assert events[0] == Text("ok") and isinstance(events[-1], Completed)
    finally:
        await agent.aclose()

    # The record is valid JSONL and the interrupted tool call was answered (repaired).
    lines = session_lines(tmp_path, agent, "d1")
    assert lines[0]["type"] == "session"
    store = agent.config.sessions
    assert isinstance(store, FileSessionStore)
    record = await store.open_if_exists("d1")
    assert record is not None
    roles = [m["role"] for m in record.context().messages]
    assert roles == ["user", "assistant", "toolResult", "user", "assistant"]


async def test_disconnect_cancels_a_silent_agent_without_handler_cancellation() -> None:
    """Mounted in a plain aiohttp app (no ``handler_cancellation``), the handler still notices."""
    agent = FakeAgent([Text("first"), 3600.0, Completed()])
    app = web.Application()
    app.router.add_route("*", "/invoke", create_invoke_handler(agent))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        async with aiohttp.ClientSession() as client:
            resp = await client.post(
                f"http://127.0.0.1:{site.port}/invoke", json={"session": "s", "text": "x"}
            )
            assert await read_event(resp) == Text("first")
            left = time.monotonic()
            resp.close()
        await asyncio.wait_for(agent.cancelled.wait(), 5)
        assert time.monotonic() - left < 3.0
        assert agent.closed.is_set()
    finally:
        await runner.cleanup()


async def test_server_close_cancels_open_streams_promptly() -> None:
    agents = [FakeAgent([Text("x"), 3600.0]) for _ in range(5)]
    index = iter(agents)

    class Dispatch:
        def invoke(self, scope: object, prompt: object) -> object:
            return next(index).invoke(scope, prompt)  # type: ignore[arg-type]

    server = serve(create_invoke_handler(Dispatch()), port=0, host="127.0.0.1")  # type: ignore[arg-type]
    port = await server.listening
    async with aiohttp.ClientSession() as client:
        responses = [
            await client.post(f"http://127.0.0.1:{port}/invoke", json={"session": f"s{i}", "text": "x"})
            for i in range(5)
        ]
        for resp in responses:
            assert await read_event(resp) == Text("x")
        started = time.monotonic()
        await server.close()
        elapsed = time.monotonic() - started
        for resp in responses:
            resp.close()
    assert elapsed < 2.0
    for agent in agents:
        assert agent.cancelled.is_set() and agent.closed.is_set()
