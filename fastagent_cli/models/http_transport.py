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

Idle connections are also closed on a timer once their keep-alive expires (one timer for the
whole pool, set for the oldest idle connection), so a quiet agent does not hold sockets open to
its providers until its next request. A provider's ``caFile`` (the request's
``fastagent.ca_file`` extension) is part of the origin's key: connections checked against one CA
are never reused for a request that trusts another. A proxy in the environment is honoured here
too (:mod:`~fastagent_cli.models.http_proxy`).

A request takes an idle connection, else opens one while under the limit, else waits. Handing a
connection back is synchronous bookkeeping that runs in a ``finally`` (no ``await`` before it), so
a request cancelled at any moment can never leave its slot counted as busy: the promise of
:mod:`~fastagent_cli.models.http_exchange`, kept by construction. A connection that comes back in an
unknown state is closed in the background, never reused. Each connection is an
:class:`~fastagent_cli.models.http1.Http1Connection` on an asyncio socket of our own (connect and
TLS, timeouts); failures come out as the usual ``httpx`` exceptions.

Each connection's socket is a :class:`~fastagent_cli.models.http_socket.PacedStream`: once a
response's answer has started (its first delta went out, see
:meth:`~fastagent_cli.models.http_exchange.StreamedResponse.answer_started`) the socket is read at
most every ``pace_s``. Tokens that arrive meanwhile wait in the kernel and come out of the next read
together, so the per-read costs (the loop wake-ups, HTTP and SSE parsing, the hand-over to the turn,
one SSE write to the client) are paid once per batch instead of once per token, while the first
token is never held back.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpcore
import httpx

from fastagent_cli.models.http1 import Head, Http1Connection
from fastagent_cli.models.http_proxy import Proxy, environment_proxies, open_through
from fastagent_cli.models.http_socket import PacedStream, open_stream

__all__ = ["CA_FILE", "PooledBody", "PooledTransport"]

CA_FILE = "fastagent.ca_file"
"""The request extension naming the PEM bundle an ``https://`` request's server is checked against."""
_SWEEP_SLACK_S = 0.05

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
    def __init__(
        self,
        transport: PooledTransport,
        origin: httpcore.Origin,
        ca_file: str | None = None,
        proxy: Proxy | None = None,
    ) -> None:
        self.transport = transport
        self.origin = origin
        self.ca_file = ca_file
        self.proxy = proxy
        self.idle: deque[Http1Connection] = deque()
        self.waiters: deque[asyncio.Future[Http1Connection]] = deque()
        self.open = 0
        self.busy: set[Http1Connection] = set()
        """Connections handed out and not yet back (the transport's close aborts them)."""

    def _new(self) -> Http1Connection:
        return self.transport.new_connection(self)

    def oldest_idle_expiry(self) -> float | None:
        return self.idle[0].expires_at if self.idle else None

    def sweep(self) -> None:
        """Close expired idle connections (oldest first) and those above the keep-alive limit."""
        idle = self.idle
        while idle and (len(idle) > self.transport.max_keepalive or _expired(idle[0])):
            self._drop(idle.popleft())

    async def acquire(self, timeout_s: float | None) -> Http1Connection:
        connection = await self._take(timeout_s)
        self.busy.add(connection)
        return connection

    async def _take(self, timeout_s: float | None) -> Http1Connection:
        self.sweep()
        while self.idle:
            connection = self.idle.pop()
            if connection.is_available() and not _expired(connection):
                return connection
            self._drop(connection)
        if self.open < self.transport.max_connections:
            self.open += 1
            return self._new()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Http1Connection] = loop.create_future()
        self.waiters.append(waiter)
        expiry = None if timeout_s is None else loop.call_later(timeout_s, _expire, waiter)
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

    def release(self, connection: Http1Connection) -> None:
        """Take a connection back (synchronous: safe in any ``finally``; it never raises)."""
        self.busy.discard(connection)
        if connection.is_available() and not _expired(connection) and not self.transport.closed:
            waiter = self._next_waiter()
            if waiter is not None:
                waiter.set_result(connection)
                return
            self.idle.append(connection)
            self.sweep()
            self.transport.arm_sweep()
            return
        self._drop(connection)

    def _drop(self, connection: Http1Connection) -> None:
        """Forget a connection (closed in the background unless it already is) and pass its slot
        to the next waiter, if any."""
        if not connection.is_closed():
            self.transport.close_later(connection)
        waiter = self._next_waiter() if not self.transport.closed else None
        if waiter is not None:
            waiter.set_result(self._new())  # the slot changes hands: ``open`` stays
        else:
            self.open -= 1

    def _next_waiter(self) -> asyncio.Future[Http1Connection] | None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                return waiter
        return None


def _expired(connection: Http1Connection) -> bool:
    try:
        return connection.has_expired()
    except Exception:  # a socket that cannot even be checked is no socket to reuse
        return True


def _expire(waiter: asyncio.Future[Http1Connection]) -> None:
    if not waiter.done():
        waiter.set_exception(httpcore.PoolTimeout("no free connection within the pool timeout"))


class PooledBody(httpx.AsyncByteStream):
    """A response body of this pool (``response.stream``): its connection goes back on close."""

    def __init__(self, head: Head, origin: _Origin, connection: Http1Connection) -> None:
        self._head = head
        self._origin: _Origin | None = origin
        self._connection = connection

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx():
            async for part in self._connection.body(self._head):
                yield part

    async def aclose(self) -> None:
        self.close_nowait()

    def close_nowait(self) -> None:
        """:meth:`aclose` as plain bookkeeping, safe in any ``finally`` (also of a cancelled
        task): the connection goes back to the pool, or is dropped at once if its body was not
        read to the end."""
        origin, self._origin = self._origin, None
        if origin is not None:
            self._connection.release()
            origin.release(self._connection)


class PooledTransport(httpx.AsyncBaseTransport):
    """``httpx.AsyncClient(transport=PooledTransport(...))``: HTTP/1.1, a pool per origin."""

    def __init__(self, *, max_connections: int, max_keepalive: int, keepalive_expiry: float | None) -> None:
        self.max_connections = max_connections
        self.max_keepalive = max_keepalive
        self.keepalive_expiry = keepalive_expiry
        self.closed = False
        self._origins: dict[tuple[bytes, bytes, int, str | None], _Origin] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._ssl: dict[str | None, ssl.SSLContext] = {}
        self._proxies = environment_proxies()
        self._sweep_timer: asyncio.TimerHandle | None = None

    def new_connection(self, origin: _Origin) -> Http1Connection:
        async def opener(_: httpcore.Origin, timeout_s: float | None) -> PacedStream:
            return await self._open(origin, timeout_s)

        return Http1Connection(origin.origin, opener, self.keepalive_expiry)

    def _context(self, ca_file: str | None) -> ssl.SSLContext:
        context = self._ssl.get(ca_file)
        if context is None:  # on first use: it reads the CA bundle
            if ca_file is None:
                context = httpx.create_ssl_context()  # certifi, or SSL_CERT_FILE / SSL_CERT_DIR
            else:
                context = ssl.create_default_context(cafile=ca_file)
            context.set_alpn_protocols(["http/1.1"])
            self._ssl[ca_file] = context
        return context

    async def _open(self, pooled: _Origin, timeout_s: float | None) -> PacedStream:
        origin = pooled.origin
        context = self._context(pooled.ca_file) if origin.scheme == b"https" else None
        host = origin.host.decode("ascii")
        if pooled.proxy is not None:
            return await open_through(pooled.proxy, host, origin.port, context, timeout_s)
        return await open_stream(host, origin.port, context, timeout_s)

    def arm_sweep(self) -> None:
        """Make sure a timer will close the oldest idle connection when its keep-alive expires."""
        if self._sweep_timer is not None or self.closed or self.keepalive_expiry is None:
            return
        expiries = [e for o in self._origins.values() if (e := o.oldest_idle_expiry()) is not None]
        if expiries:
            delay = max(0.0, min(expiries) - time.monotonic()) + _SWEEP_SLACK_S
            self._sweep_timer = asyncio.get_running_loop().call_later(delay, self._swept)

    def _swept(self) -> None:
        self._sweep_timer = None
        for origin in self._origins.values():
            origin.sweep()
        self.arm_sweep()

    def close_later(self, connection: Http1Connection) -> None:
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
        body = await request.aread()
        return await self.send(
            request.method.encode(), request.url, request.headers.raw, body, request.extensions
        )

    async def send(
        self,
        method: bytes,
        url: httpx.URL,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        extensions: Mapping[str, Any],
    ) -> httpx.Response:
        """One request from its parts (``headers`` as sent, ``Host`` and ``Content-Length``
        included): what :meth:`handle_async_request` does with an ``httpx.Request``, for a wire
        client that builds none (:class:`~fastagent_cli.models.http_client.HttpStreamClient`)."""
        if self.closed:
            raise RuntimeError("the model connection pool is closed")
        scheme, host = url.raw_scheme, url.raw_host
        port = url.port or _DEFAULT_PORTS.get(scheme, 80)
        ca_file = extensions.get(CA_FILE) if scheme == b"https" else None
        key = (scheme, host, port, ca_file)
        origin = self._origins.get(key)
        if origin is None:
            with _as_httpx():
                proxy = self._proxies.for_origin(scheme.decode("ascii"), host.decode("ascii"))
            origin = self._origins[key] = _Origin(self, httpcore.Origin(scheme, host, port), ca_file, proxy)
        target = url.raw_path
        if origin.proxy is not None and scheme == b"http":  # a forward proxy: absolute form
            target = str(url.copy_with(fragment=None)).encode("ascii")
            if origin.proxy.authorization is not None:
                headers = [*headers, (b"Proxy-Authorization", origin.proxy.authorization)]
        if any(k.lower() == b"transfer-encoding" for k, _ in headers):  # a body of unknown length
            body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
        timeouts = extensions.get("timeout") or {}
        with _as_httpx():
            while True:
                connection = await origin.acquire(timeouts.get("pool"))
                try:
                    head = await connection.request(method, target, headers, body, timeouts)
                except httpcore.ConnectionNotAvailable:
                    origin.release(connection)
                    continue
                except BaseException:
                    origin.release(connection)
                    raise
                break
        return httpx.Response(
            status_code=head.status,
            headers=head.headers,
            stream=PooledBody(head, origin, connection),
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": head.reason,
                "network_stream": connection.network_stream,
            },
        )

    async def aclose(self) -> None:
        self.closed = True
        if self._sweep_timer is not None:
            self._sweep_timer.cancel()
            self._sweep_timer = None
        for origin in self._origins.values():
            while origin.idle:
                origin._drop(origin.idle.pop())
            for waiter in origin.waiters:
                if not waiter.done():
                    waiter.set_exception(httpcore.PoolTimeout("the model connection pool was closed"))
            origin.waiters.clear()
            for connection in list(origin.busy):
                connection.release()  # its reader's next read fails: the pool is closed
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=1.0)
