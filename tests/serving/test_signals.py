"""SIGINT / SIGTERM on the real ``fastagent start``: no draining, a bounded exit (features G16)."""

from __future__ import annotations

import asyncio
import json
import signal
import time

import aiohttp

from tests.conftest import AgentFactory
from tests.serving.serving_proc import ServerProcess, get

SLOW_SCRIPT = {"steps": [{"text": "too late", "delayMs": 60_000}]}
LOCAL = ("--port", "0", "--bind", "127.0.0.1")


async def _open_stream(http: aiohttp.ClientSession, port: int, session: str) -> aiohttp.ClientResponse:
    response = await http.post(f"http://127.0.0.1:{port}/invoke", json={"session": session, "text": "hi"})
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    return response


async def _drain(response: aiohttp.ClientResponse) -> bytes:
    try:
        return await response.content.read()
    except aiohttp.ClientPayloadError:
        return b"<cut>"
    finally:
        response.release()


async def test_sigterm_with_50_open_streams_exits_within_2_s(make_agent: AgentFactory) -> None:
    agent = make_agent({"scripts/slow.json": json.dumps(SLOW_SCRIPT)}, model="scripted/slow")
    async with ServerProcess.spawn("start", str(agent), *LOCAL) as server:
        port = await server.port()
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=30)
        ) as http:
            streams = await asyncio.gather(*(_open_stream(http, port, f"s{i}") for i in range(50)))
            await asyncio.sleep(0.3)  # every turn is inside its slow model call
            started = time.monotonic()
            server.send(signal.SIGTERM)
            code = await server.wait(within=10)
            elapsed = time.monotonic() - started
            bodies = await asyncio.wait_for(asyncio.gather(*(_drain(s) for s in streams)), 5)
        assert elapsed < 2.0, f"exit took {elapsed:.2f} s"
        assert code == -signal.SIGTERM
        assert all(b"too late" not in body for body in bodies)  # turns were not drained
        assert "[fastagent] SIGTERM: shutting down" in server.text
        assert "Traceback" not in server.text
        assert "overran" not in server.text  # the orderly shutdown finished by itself


async def test_sigint_stops_an_idle_server_promptly(make_agent: AgentFactory) -> None:
    async with ServerProcess.spawn("start", str(make_agent()), *LOCAL) as server:
        port = await server.port()
        assert await get(port) == (200, "ok\n")
        started = time.monotonic()
        server.send(signal.SIGINT)
        assert await server.wait(within=10) == -signal.SIGINT
        assert time.monotonic() - started < 2.0
        assert "[fastagent] SIGINT: shutting down" in server.text


LONG_CONNECTION = """
import asyncio
from pathlib import Path

MARK = Path(__file__).parent.parent / "stopped.txt"

class Poller:
    name = "poller"

    def connect(self, ctx, stop):
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        ready.set_result(None)

        async def run():
            await stop.wait()
            MARK.write_text("stopped by the host\\n")

        class Connection:
            pass

        connection = Connection()
        connection.ready = ready
        connection.closed = asyncio.ensure_future(run())
        return connection

channel = Poller()
"""


async def test_sigterm_stops_long_connections(make_agent: AgentFactory) -> None:
    agent = make_agent({"channels/poller.py": LONG_CONNECTION})
    async with ServerProcess.spawn("start", str(agent), *LOCAL) as server:
        port = await server.port()
        await server.wait_for(r"\[fastagent\] long connections: poller$")
        assert await get(port) == (200, "ok\n")
        server.send(signal.SIGTERM)
        assert await server.wait(within=10) == -signal.SIGTERM
    assert (agent / "stopped.txt").read_text() == "stopped by the host\n"


BLOCKING_TOOL = """
import asyncio
import sys
import time

from fastagent_cli.tools.define import tool


@tool
async def block() -> str:
    \"\"\"Block a worker thread for a long time.\"\"\"
    print("blocking a thread now", file=sys.stderr, flush=True)
    await asyncio.to_thread(time.sleep, 30)
    return "done"
"""


async def test_a_tool_stuck_in_a_thread_cannot_hold_the_exit(make_agent: AgentFactory) -> None:
    script = {"steps": [{"toolCalls": [{"name": "block", "args": {}}]}, {"text": "never"}]}
    agent = make_agent(
        {"tools/block.py": BLOCKING_TOOL, "scripts/block.json": json.dumps(script)}, model="scripted/block"
    )
    async with ServerProcess.spawn("start", str(agent), *LOCAL) as server:
        port = await server.port()
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            response = await _open_stream(http, port, "stuck")
            await server.wait_for(r"^blocking a thread now$")
            started = time.monotonic()
            server.send(signal.SIGTERM)
            code = await server.wait(within=10)
            elapsed = time.monotonic() - started
            await _drain(response)
        assert elapsed < 2.0, f"exit took {elapsed:.2f} s"
        assert code == 128 + signal.SIGTERM  # the 1 s fallback: a thread cannot be cancelled
        assert "WARN  [fastagent] shutdown overran 1 s; exiting now" in server.text
