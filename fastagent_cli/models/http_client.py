"""The HTTP half every wire client shares: an owned or borrowed ``httpx.AsyncClient`` with the
pool limits of :mod:`~fastagent_cli.models.http_pool`, and one streaming POST whose failures come
out classified as :class:`~fastagent_cli.errors.ProviderError` (status errors with the provider's
own message, connection resets and timeouts as retryable).

On the client's own pool (:class:`~fastagent_cli.models.http_transport.PooledTransport`, the
usual case) the POST is sent and read in the caller's task
(:class:`~fastagent_cli.models.http_direct.DirectRead`); through a borrowed ``httpx`` client it
runs as an :class:`~fastagent_cli.models.http_exchange.Exchange`. Either way a turn cancelled at
any moment (a client that disconnects) leaves no request behind in the connection pool.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx

from fastagent_cli import telemetry
from fastagent_cli.contract import json_text
from fastagent_cli.models.http_direct import DirectRead
from fastagent_cli.models.http_errors import error_from_exception, error_from_response
from fastagent_cli.models.http_exchange import Exchange, Send, StreamedResponse, with_request
from fastagent_cli.models.http_pool import DEFAULT_POOL, PoolLimits, new_http_client
from fastagent_cli.models.http_transport import CA_FILE, PooledTransport
from fastagent_cli.models.types import ModelInfo

__all__ = ["HttpStreamClient", "StreamedResponse"]

log = logging.getLogger("fastagent.models")

_FULL_LOG_INTERVAL_S = 30.0
_CLOSE_WAIT_S = 1.0
_URLS_KEPT = 64


class HttpStreamClient:
    def __init__(
        self,
        http: httpx.AsyncClient | None = None,
        *,
        pool: PoolLimits = DEFAULT_POOL,
    ) -> None:
        self._owns_http = http is None
        self._transport: PooledTransport | None = None
        """The owned client's pool: requests go to it directly (see :meth:`_send_direct`)."""
        if http is None:
            self._transport = pool.transport()
            http = new_http_client(pool, self._transport)
        self._http = http
        self._defaults = list(http.headers.raw)
        self._urls: dict[str, httpx.URL] = {}
        self._pool = pool
        self._timeout = pool.timeout()
        self._timeouts = pool.timeouts()
        self._exchanges: set[Exchange] = set()
        self._direct = 0
        """Requests of the owned pool in flight (each read in its caller's task)."""
        self._closed = False
        self._full_logged_at = float("-inf")

    @property
    def in_flight(self) -> int:
        """Model requests started and not yet closed."""
        return len(self._exchanges) + self._direct

    async def aclose(self) -> None:
        """Stop every exchange (boundedly), then close the HTTP client if this object created it
        (its pool aborts the connections still being read: their readers fail)."""
        self._closed = True
        exchanges, self._exchanges = list(self._exchanges), set()
        for exchange in exchanges:
            exchange.abandon()
        tasks = {exchange.task for exchange in exchanges}
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=_CLOSE_WAIT_S)
            for task in pending:
                task.cancel()
        if self._owns_http:
            await self._http.aclose()

    def _note_if_full(self) -> None:
        """A request about to start while every connection is busy: logged (once per interval)."""
        if self.in_flight >= self._pool.max_connections:
            now = time.monotonic()
            if now - self._full_logged_at >= _FULL_LOG_INTERVAL_S:
                self._full_logged_at = now
                log.warning(
                    "[models] the model connection pool is full (%d requests in flight, limit %d); "
                    "new requests wait up to %g s for a connection",
                    self.in_flight,
                    self._pool.max_connections,
                    self._pool.pool_timeout_s,
                )

    def _start(self, send: Send, request: Callable[[], httpx.Request], name: str) -> Exchange:
        exchange = Exchange(send, request, name, self._pool.coalesce_s)
        self._exchanges.add(exchange)
        exchange.task.add_done_callback(lambda _: self._exchanges.discard(exchange))
        return exchange

    @asynccontextmanager
    async def _post_stream(
        self, provider: str, url: str, headers: Mapping[str, str], body: Any, model: ModelInfo | None = None
    ) -> AsyncIterator[StreamedResponse]:
        """A successful streaming response; any HTTP failure, also while the body is read inside
        the ``with`` block, raises a classified ProviderError. Leaving the block (normally, by an
        error or by cancellation) closes the request. ``model``: its provider's own timeouts and
        CA file apply."""
        # Encoded here, not by httpx: a lone surrogate in the conversation must not fail the turn.
        payload = body if isinstance(body, bytes) else json_text(body).encode("utf-8")
        sent = {**headers, "content-type": "application/json"}
        parent = telemetry.traceparent()  # the model request's span: the provider's trace continues it
        if parent is not None:
            sent["traceparent"] = parent
        overrides = model.timeouts if model is not None else None
        extensions: dict[str, Any] = {
            "timeout": self._pool.timeouts(overrides) if overrides else self._timeouts
        }
        if model is not None and model.ca_file:
            extensions[CA_FILE] = model.ca_file
        self._note_if_full()
        if self._transport is not None:
            send, request = self._send_direct(self._transport, self._url(url), sent, payload, extensions)
            context = self._read_direct(send, request)
        else:
            built = self._http.build_request(
                "POST", url, content=payload, headers=sent, timeout=self._timeout
            )
            built.extensions.update(extensions)
            send, request = partial(self._http.send, built, stream=True), lambda: built
            context = self._read_exchange(send, request, f"http POST {built.url.host}")
        try:
            async with context as response:
                if not response.is_success:
                    raw = await response.aread()
                    raise error_from_response(provider, response.status_code, raw, response.headers, url)
                yield response
        except httpx.HTTPError as exc:
            if isinstance(exc, httpx.PoolTimeout):
                log.warning(
                    "[models] no free model connection within %g s (%d requests in flight, limit %d)",
                    self._pool.pool_timeout_s,
                    self.in_flight,
                    self._pool.max_connections,
                )
            raise error_from_exception(provider, with_request(exc, request)) from exc

    @asynccontextmanager
    async def _read_direct(
        self, send: Send, request: Callable[[], httpx.Request]
    ) -> AsyncIterator[StreamedResponse]:
        """The owned pool's response, read in this task (:mod:`~fastagent_cli.models.http_direct`)."""
        self._direct += 1
        direct: DirectRead | None = None
        try:
            direct = DirectRead(await send(), self._pool.coalesce_s)
            yield StreamedResponse(direct.response, direct)
        except httpx.HTTPError:
            if self._closed:  # the pool aborted the connection under the reader
                raise httpx.ReadError("the model client was closed", request=request()) from None
            raise
        finally:
            self._direct -= 1
            if direct is not None:
                direct.close()

    @asynccontextmanager
    async def _read_exchange(
        self, send: Send, request: Callable[[], httpx.Request], name: str
    ) -> AsyncIterator[StreamedResponse]:
        """A borrowed client's response, read by an :class:`Exchange` worker."""
        exchange = self._start(send, request, name)
        try:
            yield await exchange.response()
        finally:
            exchange.abandon()

    def _url(self, url: str) -> httpx.URL:
        """``url`` parsed, once per URL (httpx takes 70 us to parse one)."""
        parsed = self._urls.get(url)
        if parsed is None:
            if len(self._urls) >= _URLS_KEPT:
                self._urls.clear()
            parsed = self._urls[url] = httpx.URL(url)
        return parsed

    def _send_direct(
        self,
        transport: PooledTransport,
        url: httpx.URL,
        headers: Mapping[str, str],
        payload: bytes,
        extensions: dict[str, Any],
    ) -> tuple[Send, Callable[[], httpx.Request]]:
        """The request sent straight to the owned pool, as ``httpx.AsyncClient.send`` would send
        it (the same header fields in the same order: ``Host``, the client's defaults the request
        does not set, the request's, ``Content-Length``) without building an ``httpx.Request`` and
        going through the client's auth, redirect, cookie and event-hook machinery, which a
        model request never uses: 0.3 ms of a short turn's CPU. The ``httpx.Request`` that
        errors name is built only when one is raised."""
        sent = [(key.encode("ascii"), text.encode("ascii")) for key, text in headers.items()]
        names = {name.lower() for name, _ in sent}
        raw = [(name, value) for name, value in self._defaults if name.lower() not in names] + sent
        names.update(name.lower() for name, _ in self._defaults)
        if b"host" not in names:
            raw.insert(0, (b"Host", url.netloc))
        if b"content-length" not in names and b"transfer-encoding" not in names:
            raw.append((b"Content-Length", str(len(payload)).encode("ascii")))
        send = partial(transport.send, b"POST", url, raw, payload, extensions)
        return send, lambda: httpx.Request("POST", url, headers=raw, extensions=extensions)
