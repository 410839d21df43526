"""The HTTP host: one handler function sees every request, on aiohttp's low-level server.

::

    server = serve(build_router(routes), port=0, host="127.0.0.1")
    port = await server.listening          # the bound port (ServeError if it cannot bind)
    ...
    await server.close()                   # stop listening, force-close open streams

There is no aiohttp router: the handler (usually :func:`~fastagent_cli.serving.router.build_router`)
dispatches itself. The host adds what every handler needs:

* an exception before the response started answers ``500 internal error``; after it started, the
  connection is cut (a truncated stream, never a hang). ``aiohttp.web.HTTPException`` raised by a
  handler is answered as aiohttp answers it;
* a client that disconnects cancels its handler task (``handler_cancellation``), so a streaming
  handler stops its work at once;
* header and request deadlines, a connection cap and quiet client errors
  (:mod:`~fastagent_cli.serving.http_limits`): a malformed request is a ``400`` and one debug line;
* no access log (the per-turn trace is the log).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from fastagent_cli.errors import ServeError
from fastagent_cli.serving.binding import concrete_port
from fastagent_cli.serving.body import text_response
from fastagent_cli.serving.http_limits import (
    HEADERS_TIMEOUT_S,
    REQUEST_TIMEOUT_S,
    GuardedHandler,
    GuardedServer,
    is_client_error,
)
from fastagent_cli.serving.router import Handler
from fastagent_cli.serving.sse import abort_connection

__all__ = ["Server", "bind_error_message", "serve"]

log = logging.getLogger("fastagent.host")

CLOSE_TIMEOUT_S = 1.0
"""How long :meth:`Server.close` waits for cancelled handlers to finish their cleanup."""
ANSWER_GRACE_S = 0.3
"""How long :meth:`Server.close` lets requests that have not started their response finish."""
_READ_PENDING_S = 0.05


class Server:
    """A listening HTTP host. Create it with :func:`serve`."""

    def __init__(
        self,
        handler: Handler,
        *,
        port: int,
        host: str | None,
        close_timeout: float,
        limits: Mapping[str, Any] | None = None,
        sockets: Sequence[socket.socket] = (),
    ) -> None:
        self._handler = handler
        self._web = GuardedServer(self._guarded, handler_cancellation=True, access_log=None, **(limits or {}))
        self._runner = web.ServerRunner(self._web, shutdown_timeout=close_timeout)
        self._port: int | None = None
        self._active: dict[int, web.BaseRequest] = {}
        """Requests being handled, by ``id`` (requests are not hashable)."""
        self._listeners: list[asyncio.Server] = []
        """Servers on sockets handed in (the dev worker's), closed by :meth:`close`."""
        self._closed = False
        self._accepting = True
        self.host = host
        self.listening: asyncio.Task[int] = asyncio.ensure_future(self._start(port, host, sockets))
        """Resolves to the bound port once listening; raises :class:`ServeError` if binding fails."""

    @property
    def port(self) -> int | None:
        """The bound port, or ``None`` before listening."""
        return self._port

    async def _start(self, port: int, host: str | None, sockets: Sequence[socket.socket]) -> int:
        await self._runner.setup()
        if sockets:  # listening already (the dev supervisor's): serve on them
            loop = asyncio.get_running_loop()
            for sock in sockets:
                self._listeners.append(await loop.create_server(self._web, sock=sock, backlog=128))
            self._port = int(sockets[0].getsockname()[1])
            return self._port
        # port 0 on all interfaces: one port free on IPv4 and IPv6 alike, so ``port`` answers both
        site = web.TCPSite(self._runner, host, concrete_port(host, port))
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise ServeError(bind_error_message(exc, port, host)) from None
        self._port = site.port
        return site.port

    async def _guarded(self, request: web.BaseRequest) -> web.StreamResponse:
        connection = request.protocol
        if isinstance(connection, GuardedHandler):
            connection.request_started(request)
        self._active[id(request)] = request
        try:
            return await self._handler(request)
        except web.HTTPException:
            raise
        except HttpProcessingError as exc:
            if not is_client_error(exc) or request.writer.output_size > 0:
                raise
            log.debug("[host] %s %s: malformed request body: %s", request.method, request.raw_path, exc)
            response = text_response("bad request\n", 400)
            response.force_close()
            return response
        except Exception:
            if request.writer.output_size == 0:
                log.exception("[host] %s %s failed; answering 500", request.method, request.raw_path)
                return text_response("internal error\n", 500)
            log.exception("[host] %s %s failed mid-response; closing it", request.method, request.raw_path)
            abort_connection(request)
            return web.StreamResponse()  # never sent: the connection is already cut
        finally:
            if isinstance(connection, GuardedHandler):
                connection.request_finished()
            self._active.pop(id(request), None)

    async def stop_accepting(self) -> None:
        """Stop taking connections off the listening sockets, serving those already open (a
        draining ``dev`` worker; :meth:`close` does it too)."""
        if self._accepting:
            self._accepting = False
            await self._stop_accepting()

    async def settle(self, within: float) -> None:
        """Wait (at most ``within`` seconds) until the only requests left are ``GET`` streams
        (event watchers, which never end by themselves): answers being written get to finish."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        # Polled, as _answer_pending: a response ending has no event to wait on.
        while loop.time() < deadline and any(r.method != "GET" for r in self._active.values()):  # noqa: ASYNC110
            await asyncio.sleep(0.02)

    async def _stop_accepting(self) -> None:
        """Stop taking connections off the listening sockets. On the handed-in sockets, reading
        stops first and connections accepted in that loop tick are attached before the server
        closes: closing right after an accept loses that connection (asyncio refuses to attach
        a transport to a closed server and never closes its socket), and the client sees a reset.
        What is still queued on the sockets is left for the next ``dev`` worker."""
        loop = asyncio.get_running_loop()
        for listener in self._listeners:
            for sock in listener.sockets:
                loop.remove_reader(sock.fileno())
        if self._listeners:
            await asyncio.sleep(0)  # accepts of the last tick attach their transports
            await asyncio.sleep(0)
        for listener in self._listeners:
            listener.close()
        for site in list(self._runner.sites):
            await site.stop()

    async def _answer_pending(self) -> None:
        """Let requests that already arrived be answered: handlers that have not started their
        response get up to :data:`ANSWER_GRACE_S` (open streams are not waited for)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ANSWER_GRACE_S
        await asyncio.sleep(_READ_PENDING_S)  # what the last accepts carried starts being handled
        # Polled: "a response has started" has no event to wait on (streams start and stay open).
        while loop.time() < deadline and any(r.writer.output_size == 0 for r in self._active.values()):  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    def close_all_connections(self) -> None:
        """Cut every open connection now (idle keep-alives and open streams alike); their handler
        tasks are cancelled, which closes the agents' streams."""
        for connection in self._web.connections:
            transport = connection.transport
            if transport is not None:
                transport.abort()

    async def close(self) -> None:
        """Stop listening, answer the requests already received (within :data:`ANSWER_GRACE_S`),
        force-close open streams, and wait (boundedly) for handlers to finish. Turns in flight are
        cancelled, not drained. Safe to call twice.

        The grace matters to ``dev``: connections still queued on the listening socket go to the
        next worker, and one this worker had already accepted is answered, not reset."""
        if self._closed:
            return
        self._closed = True
        if not self.listening.done():
            self.listening.cancel()
        with contextlib.suppress(BaseException):
            await self.listening
        await self.stop_accepting()
        await self._answer_pending()
        self.close_all_connections()
        await self._runner.cleanup()


def serve(
    handler: Handler,
    *,
    port: int,
    host: str | None = None,
    close_timeout: float = CLOSE_TIMEOUT_S,
    max_connections: int | None = None,
    headers_timeout: float = HEADERS_TIMEOUT_S,
    request_timeout: float = REQUEST_TIMEOUT_S,
    sockets: Sequence[socket.socket] = (),
) -> Server:
    """Serve ``handler`` on ``host:port`` (``host=None`` binds all interfaces; ``localhost`` binds
    127.0.0.1; ``port=0`` picks a free port), or on ``sockets`` already listening (the dev
    supervisor's). Call inside a running event loop; await ``server.listening`` for the bound port.
    The limits are described in :mod:`~fastagent_cli.serving.http_limits`."""
    if host == "localhost":
        host = "127.0.0.1"
    limits = {
        "max_connections": max_connections,
        "headers_timeout": headers_timeout,
        "request_timeout": request_timeout,
    }
    return Server(
        handler, port=port, host=host or None, close_timeout=close_timeout, limits=limits, sockets=sockets
    )


def bind_error_message(exc: OSError, port: int, host: str | None) -> str:
    where = f"{host}:{port}" if host else f"port {port} (all interfaces)"
    if exc.errno == errno.EADDRINUSE:
        return f"cannot listen on {where}: the port is already in use; pick another with --port"
    if exc.errno == errno.EACCES:
        return (
            f"cannot listen on {where}: permission denied (ports below 1024 need privileges); "
            "pick another with --port"
        )
    reason = exc.strerror or str(exc)
    return f"cannot listen on {where}: {reason}; check the address (--bind) or pick another port with --port"
