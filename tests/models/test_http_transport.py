"""The wire clients' own connection pool (:class:`PooledTransport`): kept-alive reuse, a fair
queue with its pool timeout, expiry, no slot ever lost to a cancelled request, and a close that
leaves nothing open."""

from __future__ import annotations

import asyncio
import os
import resource
import socket
from collections.abc import AsyncIterator, Callable

import httpcore
import httpx
import pytest
from aiohttp import web

from fastagent_cli.models.http_pool import PoolLimits, new_http_client
from fastagent_cli.models.http_socket import readable
from fastagent_cli.models.http_transport import PooledTransport, _Origin
from tests.serving.serving_proc import established_connections


class Origin:
    """A local server: ``/fast`` answers at once, ``/hold/<n>`` streams a first line and then
    waits until ``release(n)``; ``peers`` records each request's client port (reuse shows)."""

    def __init__(self) -> None:
        self.peers: list[int] = []
        self.order: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> Origin:
        app = web.Application()
        app.router.add_get("/fast", self.fast)
        app.router.add_get("/hold/{name}", self.hold)
        self.runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        for gate in self.gates.values():
            gate.set()
        assert self.runner is not None
        await self.runner.cleanup()

    def gate(self, name: str) -> asyncio.Event:
        return self.gates.setdefault(name, asyncio.Event())

    def _note(self, request: web.Request) -> None:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.peers.append(peer[1] if peer else 0)

    async def fast(self, request: web.Request) -> web.Response:
        self._note(request)
        return web.Response(text="ok")

    async def hold(self, request: web.Request) -> web.StreamResponse:
        self._note(request)
        name = request.match_info["name"]
        self.order.append(name)
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"first\n")
        await self.gate(name).wait()
        await response.write(b"last\n")
        await response.write_eof()
        return response


async def eventually(condition: Callable[[], bool]) -> None:
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition never held")


def pooled(**limits: float) -> httpx.AsyncClient:
    """A client on the pool (built directly: a proxy in the environment would choose httpx's)."""
    pool = PoolLimits(**limits)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=pool.transport(), timeout=pool.timeout())


def transport_of(http: httpx.AsyncClient) -> PooledTransport:
    transport = http._transport  # the client's own transport
    assert isinstance(transport, PooledTransport)
    return transport


async def body(http: httpx.AsyncClient, url: str) -> bytes:
    response = await http.get(url)
    return response.content


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    async with Origin() as server:
        yield server


async def test_sequential_requests_reuse_one_connection(origin: Origin) -> None:
    async with pooled() as http:
        for _ in range(5):
            assert await body(http, f"{origin.url}/fast") == b"ok"
        assert len(set(origin.peers)) == 1
        assert transport_of(http).connections() == {origin.url: (1, 1, 0)}


def arrived_or_queued(origin: Origin, http: httpx.AsyncClient, sent: int) -> bool:
    """The first two requests reached the server and the rest wait in the pool's queue."""
    queued = sent - 2
    waiting = transport_of(http).connections()[origin.url][2] if queued > 0 else 0
    return len(origin.order) >= min(2, sent) and waiting >= queued


async def test_waiting_requests_are_served_in_arrival_order(origin: Origin) -> None:
    async with pooled(max_connections=2) as http:
        tasks = []
        for name in "abcdef":
            tasks.append(asyncio.create_task(body(http, f"{origin.url}/hold/{name}")))
            await eventually(lambda n=len(tasks): arrived_or_queued(origin, http, n))
        assert transport_of(http).connections()[origin.url] == (2, 0, 4)
        for name in "abcdef":
            await eventually(lambda name=name: name in origin.order)
            origin.gate(name).set()
        assert [await t for t in tasks] == [b"first\nlast\n"] * 6
        assert origin.order == list("abcdef")
        assert transport_of(http).connections()[origin.url] == (2, 2, 0)


async def test_pool_timeout_is_httpx_pool_timeout_and_frees_the_queue(origin: Origin) -> None:
    async with pooled(max_connections=1, pool_timeout_s=0.2) as http:
        holder = asyncio.create_task(body(http, f"{origin.url}/hold/h"))
        await eventually(lambda: bool(origin.order))
        with pytest.raises(httpx.PoolTimeout):
            await http.get(f"{origin.url}/fast")
        assert transport_of(http).connections()[origin.url] == (1, 0, 0)
        origin.gate("h").set()
        assert await holder == b"first\nlast\n"
        assert await body(http, f"{origin.url}/fast") == b"ok"


async def test_cancelled_waiters_and_readers_never_lose_a_slot(origin: Origin) -> None:
    async with pooled(max_connections=2) as http:
        holders = [asyncio.create_task(body(http, f"{origin.url}/hold/x{i}")) for i in range(2)]
        await eventually(lambda: len(origin.order) >= 2)
        waiters = [asyncio.create_task(http.get(f"{origin.url}/fast")) for _ in range(5)]
        await asyncio.sleep(0.05)
        for task in waiters:
            task.cancel()
        holders[0].cancel()  # a reader that leaves mid-body
        await asyncio.gather(*waiters, holders[0], return_exceptions=True)
        origin.gate("x1").set()
        assert await holders[1] == b"first\nlast\n"
        results = await asyncio.wait_for(
            asyncio.gather(*(body(http, f"{origin.url}/fast") for _ in range(4))), 5
        )
        assert results == [b"ok"] * 4
        opened, _, waiting = transport_of(http).connections()[origin.url]
        assert opened <= 2 and waiting == 0


async def test_idle_connections_are_closed_on_a_timer_when_their_keep_alive_expires(origin: Origin) -> None:
    """Not only on the next request: a quiet agent must not hold its model sockets open."""
    port = int(origin.url.rsplit(":", 1)[1])
    async with pooled(keepalive_expiry_s=0.3) as http:
        tasks = [asyncio.create_task(body(http, f"{origin.url}/hold/{n}")) for n in "abc"]
        await eventually(lambda: len(origin.order) == 3)
        for name in "abc":
            origin.gate(name).set()
        await asyncio.gather(*tasks)
        assert transport_of(http).connections() == {origin.url: (3, 3, 0)}
        assert established_connections(os.getpid(), port) == 3
        await asyncio.sleep(0.6)  # no request meanwhile
        assert transport_of(http).connections() == {origin.url: (0, 0, 0)}
        await eventually(lambda: established_connections(os.getpid(), port) == 0)
        assert await body(http, f"{origin.url}/fast") == b"ok"  # and the pool still serves


async def test_expired_idle_connections_are_closed_and_replaced(origin: Origin) -> None:
    async with pooled(keepalive_expiry_s=0.05) as http:
        assert await body(http, f"{origin.url}/fast") == b"ok"
        await asyncio.sleep(0.15)
        assert await body(http, f"{origin.url}/fast") == b"ok"
        assert len(set(origin.peers)) == 2
        assert transport_of(http).connections()[origin.url] == (1, 1, 0)


async def test_keepalive_limit_closes_the_surplus(origin: Origin) -> None:
    async with pooled(max_keepalive=1) as http:
        tasks = [asyncio.create_task(body(http, f"{origin.url}/hold/k{i}")) for i in range(3)]
        await eventually(lambda: len(origin.order) >= 3)
        for i in range(3):
            origin.gate(f"k{i}").set()
        await asyncio.gather(*tasks)
        assert transport_of(http).connections()[origin.url] == (1, 1, 0)


async def test_close_fails_waiters_and_refuses_new_requests(origin: Origin) -> None:
    http = pooled(max_connections=1)
    holder = asyncio.create_task(body(http, f"{origin.url}/hold/c"))
    await eventually(lambda: bool(origin.order))
    waiter = asyncio.create_task(http.get(f"{origin.url}/fast"))
    await asyncio.sleep(0.02)
    await transport_of(http).aclose()
    with pytest.raises(httpx.PoolTimeout):
        await waiter
    holder.cancel()
    await asyncio.gather(holder, return_exceptions=True)
    with pytest.raises(RuntimeError, match="closed"):
        await http.get(f"{origin.url}/fast")
    await http.aclose()


async def test_connect_errors_surface_as_httpx_errors_and_free_the_slot() -> None:
    async with pooled(max_connections=1, connect_timeout_s=2) as http:
        for _ in range(3):
            with pytest.raises(httpx.ConnectError):
                await http.get("http://127.0.0.1:9/")  # the discard port: nothing listens
        assert transport_of(http).connections()["http://127.0.0.1:9"] == (0, 0, 0)


def free_descriptor_above(start: int) -> int:
    for fd in range(start, start + 1000):
        try:
            os.fstat(fd)
        except OSError:
            return fd
    pytest.skip("no free descriptor number found")


def test_readability_checks_work_above_descriptor_1023() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2100:
        pytest.skip("the open-file limit is below 2100")
    if soft != resource.RLIM_INFINITY and soft < 2100:
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (2100 if hard == resource.RLIM_INFINITY else min(hard, 4096), hard)
        )
    a, b = socket.socketpair()
    high = os.dup2(a.fileno(), free_descriptor_above(1500))
    try:
        assert not readable(high)
        b.send(b"x")
        assert readable(high)  # select() would raise ValueError here
    finally:
        os.close(high)
        a.close()
        b.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class Unreadable:
    """A connection whose state cannot even be checked."""

    def __init__(self) -> None:
        self.closed = False

    def is_available(self) -> bool:
        return True

    def has_expired(self) -> bool:
        raise ValueError("filedescriptor out of range in select()")

    def is_closed(self) -> bool:
        return self.closed

    async def aclose(self) -> None:
        self.closed = True


async def test_a_connection_that_fails_its_check_is_dropped_and_its_slot_freed() -> None:
    transport = PooledTransport(max_connections=1, max_keepalive=1, keepalive_expiry=5.0)
    origin = _Origin(transport, httpcore.Origin(b"http", b"127.0.0.1", 1))
    origin.open = 1
    connection = Unreadable()
    origin.release(connection)  # type: ignore[arg-type]
    assert origin.open == 0 and not origin.idle
    await asyncio.sleep(0)
    assert connection.closed
    await transport.aclose()


async def test_a_proxy_in_the_environment_keeps_the_same_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """One client for every provider: a proxy is honoured by our transport, not by a second one
    (the tunnel itself is tested over TLS in tests/models/test_tls_transport.py)."""
    for name in (
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "localhost")
    async with new_http_client(PoolLimits(max_connections=7)) as http:
        transport = transport_of(http)
        proxy = transport._proxies.for_origin("https", "api.example.com")
        assert proxy is not None and (proxy.host, proxy.port) == ("127.0.0.1", 9)
        assert transport._proxies.for_origin("https", "localhost") is None  # NO_PROXY
        assert transport._proxies.for_origin("http", "api.example.com") is None  # only HTTPS_PROXY set
