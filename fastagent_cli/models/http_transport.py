"""The wire clients' connection pool: an ``httpx`` transport that costs O(1) per request.

httpcore's own pool re-examines every connection and every queued request on each pool event
(``_assign_requests_to_connections``, quadratic in the connections), so with a few hundred model
streams in flight the pool bookkeeping ate most of the server's CPU. This transport keeps, per
origin (scheme, host, port):

* ``idle``: kept-alive connections, reused most recent first; expired ones are closed from the
  other end of the deque, each once (amortised O(1));
* ``waiters``: requests waiting for a connection, served first come first served (fair under
  load), each with its own pool timeout (``httpx.PoolTimeout``, as before);
* ``open``: connections counted against ``max_connections`` (idle, busy or connecting).

A request takes an idle connection, else opens one while under the limit, else waits. Handing a
connection back is synchronous bookkeeping that runs in a ``finally`` (no ``await`` before it), so
a request cancelled at any moment can never leave its slot counted as busy: the promise of
:mod:`~fastagent_cli.models.http_exchange`, kept by construction. A connection that comes back in an
unknown state is closed in the background, never reused. Each connection is httpcore's own
``AsyncHTTPConnection`` (HTTP/1.1: connect and TLS, framing, keep-alive expiry), so the wire
behaviour is httpx's; failures come out as the usual ``httpx`` exceptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpcore
import httpx

__all__ = ["PooledTransport"]

_DEFAULT_PORTS = {b"http": 80, b"https": 443}


def _errors() -> list[tuple[type[Exception], type[httpx.HTTPError]]]:
    """httpcore's exceptions and the httpx ones they surface as, most specific first."""
    return [
        (httpcore.ConnectTimeout, httpx.ConnectTimeout),
        (httpcore.ReadTimeout, httpx.ReadTimeout),
        (httpcore.WriteTimeout, httpx.WriteTimeout),
        (httpcore.PoolTimeout, httpx.PoolTimeout),
        (httpcore.TimeoutException, httpx.TimeoutException),
        (httpcore.ConnectError, httpx.ConnectError),
        (httpcore.ReadError, httpx.ReadError),
        (httpcore.WriteError, httpx.WriteError),
        (httpcore.NetworkError, httpx.NetworkError),
        (httpcore.ProxyError, httpx.ProxyError),
        (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
        (httpcore.LocalProtocolError, httpx.LocalProtocolError),
        (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
        (httpcore.ProtocolError, httpx.ProtocolError),
    ]


_ERRORS = _errors()


@contextlib.contextmanager
def _as_httpx() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for source, target in _ERRORS:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise


class _Origin:
    def __init__(self, transport: PooledTransport, origin: httpcore.Origin) -> None:
        self.transport = transport
        self.origin = origin
        self.idle: deque[httpcore.AsyncHTTPConnection] = deque()
        self.waiters: deque[asyncio.Future[httpcore.AsyncHTTPConnection]] = deque()
        self.open = 0

    def _new(self) -> httpcore.AsyncHTTPConnection:
        return self.transport.new_connection(self.origin)

    def _sweep(self) -> None:
        """Close expired idle connections (oldest first) and those above the keep-alive limit."""
        idle = self.idle
        while idle and (len(idle) > self.transport.max_keepalive or idle[0].has_expired()):
            self._drop(idle.popleft())

    async def acquire(self, timeout: float | None) -> httpcore.AsyncHTTPConnection:
        self._sweep()
        while self.idle:
            connection = self.idle.pop()
            if connection.is_available() and not connection.has_expired():
                return connection
            self._drop(connection)
        if self.open < self.transport.max_connections:
            self.open += 1
            return self._new()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[httpcore.AsyncHTTPConnection] = loop.create_future()
        self.waiters.append(waiter)
        expiry = None if timeout is None else loop.call_later(timeout, _expire, waiter)
        try:
            return await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.release(waiter.result())  # handed over just as we were cancelled: give it back
            else:
                waiter.cancel()  # skipped when its turn comes
            raise
        finally:
            if expiry is not None:
                expiry.cancel()

    def release(self, connection: httpcore.AsyncHTTPConnection) -> None:
        """Take a connection back (synchronous: safe in any ``finally``)."""
        if connection.is_available() and not connection.has_expired() and not self.transport.closed:
            waiter = self._next_waiter()
            if waiter is not None:
                waiter.set_result(connection)
                return
            self.idle.append(connection)
            self._sweep()
            return
        self._drop(connection)

    def _drop(self, connection: httpcore.AsyncHTTPConnection) -> None:
        """Forget a connection (closed in the background unless it already is) and pass its slot
        to the next waiter, if any."""
        if not connection.is_closed():
            self.transport.close_later(connection)
        waiter = self._next_waiter() if not self.transport.closed else None
        if waiter is not None:
            waiter.set_result(self._new())  # the slot changes hands: ``open`` stays
        else:
            self.open -= 1

    def _next_waiter(self) -> asyncio.Future[httpcore.AsyncHTTPConnection] | None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                return waiter
        return None


def _expire(waiter: asyncio.Future[httpcore.AsyncHTTPConnection]) -> None:
    if not waiter.done():
        waiter.set_exception(httpcore.PoolTimeout("no free connection within the pool timeout"))


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: Any, origin: _Origin, connection: httpcore.AsyncHTTPConnection) -> None:
        self._stream = stream
        self._origin: _Origin | None = origin
        self._connection = connection

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            origin, self._origin = self._origin, None
            if origin is not None:
                origin.release(self._connection)


class PooledTransport(httpx.AsyncBaseTransport):
    """``httpx.AsyncClient(transport=PooledTransport(...))``: HTTP/1.1, a pool per origin."""

    def __init__(
        self, *, max_connections: int, max_keepalive: int, keepalive_expiry: float | None
    ) -> None:
        self.max_connections = max_connections
        self.max_keepalive = max_keepalive
        self.keepalive_expiry = keepalive_expiry
        self.closed = False
        self._origins: dict[tuple[bytes, bytes, int], _Origin] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._ssl: ssl.SSLContext | None = None
        self._backend = httpcore.AnyIOBackend()

    def new_connection(self, origin: httpcore.Origin) -> httpcore.AsyncHTTPConnection:
        if origin.scheme == b"https" and self._ssl is None:
            self._ssl = httpx.create_ssl_context()  # on first use: it reads the CA bundle
        return httpcore.AsyncHTTPConnection(
            origin,
            ssl_context=self._ssl,
            keepalive_expiry=self.keepalive_expiry,
            network_backend=self._backend,
        )

    def close_later(self, connection: httpcore.AsyncHTTPConnection) -> None:
        task = asyncio.get_running_loop().create_task(connection.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closed_one)

    def _closed_one(self, task: asyncio.Task[None]) -> None:
        self._closing.discard(task)
        if not task.cancelled():
            task.exception()  # a failed close of a dropped connection is nothing to report

    def connections(self) -> dict[str, tuple[int, int, int]]:
        """Per origin: (open, idle, waiting), for diagnostics and tests."""
        return {
            f"{o.origin.scheme.decode()}://{o.origin.host.decode()}:{o.origin.port}": (
                o.open,
                len(o.idle),
                sum(not w.done() for w in o.waiters),
            )
            for o in self._origins.values()
        }

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.closed:
            raise RuntimeError("the model connection pool is closed")
        url = request.url
        scheme, host = url.raw_scheme, url.raw_host
        port = url.port or _DEFAULT_PORTS.get(scheme, 80)
        origin = self._origins.get((scheme, host, port))
        if origin is None:
            origin = self._origins[(scheme, host, port)] = _Origin(self, httpcore.Origin(scheme, host, port))
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=scheme, host=host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]
            extensions=request.extensions,
        )
        timeout = (request.extensions.get("timeout") or {}).get("pool")
        with _as_httpx():
            while True:
                connection = await origin.acquire(timeout)
                try:
                    response = await connection.handle_async_request(sent)
                except httpcore.ConnectionNotAvailable:
                    origin.release(connection)  # closed under us: take another one
                    continue
                except BaseException:
                    origin.release(connection)
                    raise
                break
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream, origin, connection),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        self.closed = True
        for origin in self._origins.values():
            while origin.idle:
                origin._drop(origin.idle.pop())
            for waiter in origin.waiters:
                if not waiter.done():
                    waiter.set_exception(httpcore.PoolTimeout("the model connection pool was closed"))
            origin.waiters.clear()
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=1.0)
