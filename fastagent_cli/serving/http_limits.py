"""What the HTTP host enforces on every connection, whatever the handler does.

* **Header deadline** (:data:`HEADERS_TIMEOUT_S`, 60 s like the original's Node host): from the
  moment a connection opens, or its previous response was handed over, a request's headers must
  arrive whole within it. A client that sent part of a request then gets ``408 request timeout``;
  an idle keep-alive connection is just closed.
* **Request deadline** (:data:`REQUEST_TIMEOUT_S`, 300 s): the whole request, body included, must
  have arrived by then; a body still trickling in is answered ``408`` (a response already under
  way, such as an SSE stream, is never cut by it).
* **Connection cap**: at most ``max_connections`` open connections (default
  :func:`default_max_connections`: 4096, or half the process's open-file limit if that is lower);
  one more is answered ``503 too many connections`` and closed, and the cap being hit is logged.
* **Headers at prepare**: a handler (or a guard before it) may put a ``{name: value}`` mapping
  under ``request[PREPARE_HEADERS_KEY]``; each response gets those it does not set itself when it
  starts, streams included (the CORS headers of :mod:`~.request_guard`).
* **Quiet client errors**: a malformed request (bad request line, header or chunked body) is a
  client's problem, answered ``400`` and logged as one debug line, never as a traceback at ERROR
  (any peer could fill the log).

All of it lives in :class:`GuardedServer`, the protocol factory :func:`~.host.serve` listens with.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler

__all__ = [
    "HEADERS_TIMEOUT_S",
    "REQUEST_TIMEOUT_S",
    "GuardedHandler",
    "GuardedServer",
    "PREPARE_HEADERS_KEY",
    "default_max_connections",
    "is_client_error",
    "raise_open_file_limit",
]

log = logging.getLogger("fastagent.host")

HEADERS_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 300.0
_REFUSED_LOG_INTERVAL_S = 30.0
_LINGER_S = 2.0
PREPARE_HEADERS_KEY = "fastagent.prepare_headers"


def _plain(status: str, body: str) -> bytes:
    data = body.encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + data


_TIMEOUT_RESPONSE = _plain("408 Request Timeout", "request timeout\n")
_BUSY_RESPONSE = _plain("503 Service Unavailable", "too many connections\n")


def default_max_connections() -> int:
    """4096, or half the open-file limit when that is lower (the rest is for model connections,
    session files and tools); never below 16."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, soft // 2))


def raise_open_file_limit(target: int = 65536) -> None:
    """Lift the soft open-file limit towards the hard one (serving commands call this once)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = target if hard == resource.RLIM_INFINITY else min(target, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            pass


def is_client_error(exc: BaseException | None) -> bool:
    """A malformed request (the client's fault), as opposed to a failure of ours."""
    return isinstance(exc, HttpProcessingError) and getattr(exc, "code", 400) < 500


class GuardedServer(web.Server):
    """``web.Server`` whose connections keep the deadlines and the cap above."""

    def __init__(
        self,
        handler: Any,
        *,
        max_connections: int | None = None,
        headers_timeout: float = HEADERS_TIMEOUT_S,
        request_timeout: float = REQUEST_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(handler, **kwargs)
        self.max_connections = max_connections if max_connections is not None else default_max_connections()
        self.headers_timeout = headers_timeout
        self.request_timeout = request_timeout
        self.open_connections = 0
        self._refused_logged_at = float("-inf")

    def __call__(self) -> GuardedHandler:
        return GuardedHandler(self, loop=self._loop, **self._kwargs)

    def _make_request(
        self,
        message: RawRequestMessage,
        payload: StreamReader,
        protocol: RequestHandler,
        writer: AbstractStreamWriter,
        task: asyncio.Task[None],
    ) -> web.BaseRequest:
        return _HostRequest(message, payload, protocol, writer, task, self._loop)

    def note_refused(self) -> None:
        now = time.monotonic()
        if now - self._refused_logged_at >= _REFUSED_LOG_INTERVAL_S:
            self._refused_logged_at = now
            log.warning(
                "[host] connection limit reached (%d open); new connections are answered 503",
                self.open_connections,
            )


class _HostRequest(web.BaseRequest):
    """A request whose responses get ``request[PREPARE_HEADERS_KEY]`` as they start."""

    async def _prepare_hook(self, response: web.StreamResponse) -> None:
        extra = self.get(PREPARE_HEADERS_KEY)
        if extra:
            for name, value in extra.items():
                response.headers.setdefault(name, value)


class GuardedHandler(RequestHandler):
    """One connection: aiohttp's handler plus the deadlines, the cap and quiet client errors."""

    def __init__(self, manager: GuardedServer, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._guard = manager
        self._refused = False
        self._window_start = 0.0
        self._window_has_bytes = False
        self._timer: asyncio.TimerHandle | None = None
        self._request: web.BaseRequest | None = None
        self._quiet = False
        self._closing = False

    # --- connection lifetime ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        guard = self._guard
        if guard.open_connections >= guard.max_connections:
            self._refused = True
            guard.note_refused()
            assert isinstance(transport, asyncio.Transport)
            _answer_and_linger(transport, _BUSY_RESPONSE, self._loop)
            return
        guard.open_connections += 1
        super().connection_made(transport)
        self._open_window()

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._refused:
            return
        self._guard.open_connections -= 1
        self._cancel_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused or self._closing:
            return
        if data:
            self._window_has_bytes = True
        super().data_received(data)

    # --- the host tells us when a request reaches its handler and leaves it --------------------

    def request_started(self, request: web.BaseRequest) -> None:
        self._request = request
        self._cancel_timer()
        self._arm(self._window_start + self._guard.request_timeout, self._request_deadline)

    def request_finished(self) -> None:
        self._request = None
        self._open_window()

    # --- deadlines ------------------------------------------------------------------------------

    def _open_window(self) -> None:
        self._cancel_timer()
        self._window_start = self._loop.time()
        self._window_has_bytes = False
        self._arm(self._window_start + self._guard.headers_timeout, self._headers_deadline)

    def _arm(self, when: float, callback: Any) -> None:
        self._timer = self._loop.call_at(when, callback)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _headers_deadline(self) -> None:
        self._timer = None
        if self._request is not None or self.transport is None:
            return
        if self._window_has_bytes:
            log.debug(
                "[host] %s: request headers incomplete after %g s; 408",
                self._peer(),
                self._guard.headers_timeout,
            )
            self._answer_and_close(_TIMEOUT_RESPONSE)
        else:
            self.transport.close()  # an idle keep-alive connection

    def _request_deadline(self) -> None:
        self._timer = None
        request = self._request
        if request is None or self.transport is None or request.content.is_eof():
            return
        if request.writer.output_size > 0:
            return  # the response is under way: the handler owns the connection now
        log.debug(
            "[host] %s: request body incomplete after %g s; 408", self._peer(), self._guard.request_timeout
        )
        self._answer_and_close(_TIMEOUT_RESPONSE)

    def _answer_and_close(self, response: bytes) -> None:
        """Send ``response``, end our side, and read (and drop) what the client still sends for a
        moment: closing with unread input would reset the connection before the client reads the
        answer."""
        transport = self.transport
        if transport is None or self._closing:
            return
        self._closing = True
        _answer_and_linger(transport, response, self._loop)

    def _peer(self) -> str:
        transport = self.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "client"

    # --- client errors are one quiet line -------------------------------------------------------

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if not is_client_error(exc):
            return super().handle_error(request, status, exc, message)
        assert exc is not None
        log.debug("[host] %s: malformed request: %s", self._peer(), _describe(exc))
        self._quiet = True  # aiohttp's own traceback line is not wanted for the client's mistake
        try:
            return super().handle_error(request, status, None, message)
        finally:
            self._quiet = False

    def log_exception(self, *args: Any, **kw: Any) -> None:
        if not self._quiet:
            super().log_exception(*args, **kw)


def _answer_and_linger(
    transport: asyncio.Transport, response: bytes, loop: asyncio.AbstractEventLoop
) -> None:
    transport.write(response)
    if transport.can_write_eof():
        transport.write_eof()
    loop.call_later(_LINGER_S, transport.close)


def _describe(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(message).split())[:200]
