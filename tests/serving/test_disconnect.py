"""A client that goes away mid-stream cancels the turn promptly, even while the agent is silent."""

from __future__ import annotations

import asyncio
import gc
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


async def test_a_client_leaving_a_fast_stream_leaves_no_unretrieved_task_error() -> None:
    """The writer fails on the closed transport while the handler is being cancelled: that failure
    must be consumed, never logged as 'Task exception was never retrieved'."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    script: list[object] = []
    for i in range(400):
        script += [Text(f"chunk {i} " * 50), 0.0]
    agent = FakeAgent([*script, Completed()])  # type: ignore[list-item]
    server = serve(create_invoke_handler(agent), port=0, host="127.0.0.1")
    try:
        port = await server.listening
        for _ in range(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            body = b'{"session":"s","text":"x"}'
            writer.write(
                b"POST /invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()
            await asyncio.wait_for(reader.readuntil(b"chunk 3"), 10)
            writer.close()  # leave mid-stream, like `curl ... | head`
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        gc.collect()
        await asyncio.sleep(0)
    finally:
        await server.close()
        loop.set_exception_handler(previous)
    assert [c.get("message") for c in reported] == []


async def test_a_session_left_mid_silence_takes_its_next_turn_at_once(
    tmp_path: Path, start_server: StartServer
) -> None:
    # The client leaves while the tool is silent, and at once the same session asks again: it
    # waits for the abandoned turn to settle instead of reading session_busy, several times over.
    slow = SlowTool()
    agent = real_agent(tmp_path, slow_tool_script(), [slow.build()])
    base = await start_server(create_invoke_handler(agent))
    try:
        async with aiohttp.ClientSession() as client:
            for _ in range(3):
                slow.started.clear()
                resp = await client.post(f"{base}/invoke", json={"session": "r1", "text": "slow job"})
                assert isinstance(await read_event(resp), ToolStarted)
                await asyncio.wait_for(slow.started.wait(), 10)
                resp.close()  # the client goes away mid-silence
                asked = time.monotonic()
                again = await client.post(f"{base}/invoke", json={"session": "r1", "text": "slow job"})
                first = await read_event(again)
                assert isinstance(first, ToolStarted), first  # not failed{code: session_busy}
                assert time.monotonic() - asked < 0.3
                again.close()
                await asyncio.wait_for(slow.started.wait(), 10)
    finally:
        await agent.aclose()
