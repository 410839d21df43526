"""``create_agent_service``: what ``dev`` / ``start`` serve, over the real host."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fastagent_cli.contract import Completed, Text
from fastagent_cli.errors import ModelError, ServeError
from fastagent_cli.serving.service import create_agent_service
from tests.conftest import find_record
from tests.serving.conftest import StartServer, sse_events

MakeAgent = Callable[..., Path]

HELLO = """
from aiohttp import web

def channel(ctx):
    async def hello(request):
        return web.Response(text="hello\\n")
    return {"GET /hello": hello}
"""

SOCKET = """
import asyncio, types

class Socket:
    name = "socket"

    def connect(self, ctx, stop):
        self.ctx = ctx
        self.stop = stop
        self.go = asyncio.Event()
        self.crash = asyncio.Event()
        self.stopped = False

        async def ready():
            await self.go.wait()

        async def closed():
            crash = asyncio.ensure_future(self.crash.wait())
            stopping = asyncio.ensure_future(stop.wait())
            done, pending = await asyncio.wait({crash, stopping}, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            if crash in done:
                raise ConnectionError("socket lost")
            if MODE == "stubborn":
                await asyncio.sleep(3600)
            self.stopped = True

        return types.SimpleNamespace(ready=ready(), closed=closed())

MODE = "normal"
channel = Socket()
"""


def module(name: str) -> Any:
    return sys.modules[f"fastagent_agent_channels.{name}"]


async def test_without_channels_invoke_and_health_are_served(
    make_agent: MakeAgent, start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    service = await create_agent_service(make_agent())
    try:
        assert sorted(service.routes) == ["/invoke", "GET /health"]
        assert service.channels.builtin_invoke and service.channels.routes == []
        await asyncio.wait_for(service.ready, 5)
        base = await start_server(service.handler)
        async with http.get(f"{base}/health") as resp:
            assert (resp.status, await resp.text()) == (200, "ok\n")
        async with http.post(f"{base}/invoke", json={"session": "s", "text": "hi"}) as resp:
            events = sse_events(await resp.text())
        assert "".join(e.delta for e in events if isinstance(e, Text)) == "echo: hi"
        assert isinstance(events[-1], Completed)
        async with http.get(f"{base}/nope") as resp:
            assert resp.status == 404
    finally:
        await service.close()


async def test_a_route_channel_replaces_the_builtin_invoke(
    make_agent: MakeAgent, start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    service = await create_agent_service(make_agent({"channels/hello.py": HELLO}))
    try:
        assert sorted(service.routes) == ["GET /health", "GET /hello"]
        assert service.channels.routes == ["GET /hello"] and not service.channels.builtin_invoke
        base = await start_server(service.handler)
        async with http.get(f"{base}/hello") as resp:
            assert await resp.text() == "hello\n"
        async with http.post(f"{base}/invoke", json={"session": "s", "text": "hi"}) as resp:
            assert resp.status == 404
    finally:
        await service.close()


async def test_only_disabled_channels_keep_the_builtin_invoke(make_agent: MakeAgent) -> None:
    service = await create_agent_service(make_agent({"channels/hello.py.disabled": HELLO}))
    try:
        assert service.channels.builtin_invoke and "/invoke" in service.routes
        assert [p.name for p in service.loaded.disabled] == ["hello.py.disabled"]
    finally:
        await service.close()


async def test_a_broken_channel_is_fatal_and_never_brings_invoke(make_agent: MakeAgent) -> None:
    agent_dir = make_agent({"channels/broken.py": "import not_a_module_anywhere\n"})
    with pytest.raises(ServeError) as caught:
        await create_agent_service(agent_dir)
    message = caught.value.message
    assert message.startswith("channel setup is invalid (1 load failure(s), 0 route collision(s))")
    assert "channels/broken.py" in message and "*.disabled" in message
    assert "ModuleNotFoundError" in message


async def test_a_route_collision_is_fatal(make_agent: MakeAgent) -> None:
    agent_dir = make_agent({"channels/a.py": HELLO, "channels/b.py": HELLO})
    with pytest.raises(ServeError, match=r"\(0 load failure\(s\), 1 route collision\(s\)\)"):
        await create_agent_service(agent_dir)


async def test_a_channel_may_answer_health_itself(
    make_agent: MakeAgent, start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    own = HELLO.replace('"GET /hello"', '"/health"').replace("hello\\n", "mine\\n")
    service = await create_agent_service(make_agent({"channels/health.py": own}))
    try:
        assert sorted(service.routes) == ["/health"]
        base = await start_server(service.handler)
        async with http.get(f"{base}/health") as resp:
            assert await resp.text() == "mine\n"
    finally:
        await service.close()


async def test_health_is_503_until_the_long_connection_is_ready(
    make_agent: MakeAgent, start_server: StartServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    service = await create_agent_service(make_agent({"channels/socket.py": SOCKET}))
    socket = module("socket").channel
    try:
        assert service.channels.long_connections == ["socket"] and not service.channels.builtin_invoke
        assert sorted(service.routes) == ["GET /health"]
        assert socket.ctx.agent is service.agent and socket.ctx.state_root.is_absolute()
        base = await start_server(service.handler)
        async with http.get(f"{base}/health") as resp:
            assert (resp.status, await resp.text()) == (503, "starting\n")
        assert not service.ready.done()
        socket.go.set()
        await asyncio.wait_for(service.ready, 5)
        async with http.get(f"{base}/health") as resp:
            assert (resp.status, await resp.text()) == (200, "ok\n")
    finally:
        await service.close()
    assert socket.stop.is_set() and socket.stopped


async def test_an_unexpected_close_is_reported(make_agent: MakeAgent) -> None:
    closed: list[tuple[str, BaseException | None]] = []
    reported = asyncio.Event()

    def on_closed(name: str, error: BaseException | None) -> None:
        closed.append((name, error))
        reported.set()

    service = await create_agent_service(
        make_agent({"channels/socket.py": SOCKET}), on_channel_closed=on_closed
    )
    try:
        module("socket").channel.go.set()
        await asyncio.wait_for(service.ready, 5)
        module("socket").channel.crash.set()
        await asyncio.wait_for(reported.wait(), 5)
    finally:
        await service.close()
    assert [(name, type(error), str(error)) for name, error in closed] == [
        ("socket", ConnectionError, "socket lost")
    ]


async def test_a_failure_before_ready_rejects_ready(make_agent: MakeAgent) -> None:
    service = await create_agent_service(make_agent({"channels/socket.py": SOCKET}), on_channel_closed=print)
    try:
        module("socket").channel.crash.set()
        with pytest.raises(
            ServeError, match="socket failed before it was ready: ConnectionError: socket lost"
        ):
            await asyncio.wait_for(service.ready, 5)
    finally:
        await service.close()


async def test_close_reports_a_connection_that_does_not_stop(make_agent: MakeAgent) -> None:
    service = await create_agent_service(make_agent({"channels/socket.py": SOCKET}))
    module("socket").MODE = "stubborn"
    with pytest.raises(ServeError, match="socket did not stop within 0.2 s"):
        await service.close(within=0.2)


async def test_a_connect_that_raises_fails_the_service(make_agent: MakeAgent) -> None:
    broken = SOCKET.replace("self.ctx = ctx", "raise OSError('no network')")
    with pytest.raises(ServeError, match=r"long connection socket \(channels/socket.py\) failed to connect"):
        await create_agent_service(make_agent({"channels/socket.py": broken}))


async def test_an_async_connect_is_awaited(make_agent: MakeAgent) -> None:
    text = SOCKET.replace("    def connect(self, ctx, stop):", "    async def connect(self, ctx, stop):")
    service = await create_agent_service(make_agent({"channels/socket.py": text}))
    try:
        module("socket").channel.go.set()
        await asyncio.wait_for(service.ready, 5)
    finally:
        await service.close()


async def test_opener_errors_pass_through(make_agent: MakeAgent) -> None:
    with pytest.raises(ModelError):
        await create_agent_service(make_agent(model=None))


async def test_the_service_uses_the_sessions_dir(
    make_agent: MakeAgent, start_server: StartServer, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    sessions = tmp_path / "elsewhere"
    service = await create_agent_service(make_agent(), sessions_dir=str(sessions), model="scripted/echo")
    try:
        base = await start_server(service.handler)
        async with http.post(f"{base}/invoke", json={"session": "kept", "text": "x"}) as resp:
            assert isinstance(sse_events(await resp.text())[-1], Completed)
    finally:
        await service.close()
    assert find_record(sessions, "kept") is not None
