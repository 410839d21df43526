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
from collections.abc import Mapping
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
    ) -> None:
        self._handler = handler
        self._web = GuardedServer(self._guarded, handler_cancellation=True, access_log=None, **(limits or {}))
        self._runner = web.ServerRunner(self._web, shutdown_timeout=close_timeout)
        self._site: web.TCPSite | None = None
        self._closed = False
        self.host = host
        self.listening: asyncio.Task[int] = asyncio.ensure_future(self._start(port, host))
        """Resolves to the bound port once listening; raises :class:`ServeError` if binding fails."""

    @property
    def port(self) -> int | None:
        """The bound port, or ``None`` before listening."""
        return self._site.port if self._site is not None else None

    async def _start(self, port: int, host: str | None) -> int:
        await self._runner.setup()
        # port 0 on all interfaces: one port free on IPv4 and IPv6 alike, so ``port`` answers both
        site = web.TCPSite(self._runner, host, concrete_port(host, port))
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise ServeError(bind_error_message(exc, port, host)) from None
        self._site = site
        return site.port

    async def _guarded(self, request: web.BaseRequest) -> web.StreamResponse:
        connection = request.protocol
        if isinstance(connection, GuardedHandler):
            connection.request_started(request)
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

    def close_all_connections(self) -> None:
        """Cut every open connection now (idle keep-alives and open streams alike); their handler
        tasks are cancelled, which closes the agents' streams."""
        for connection in self._web.connections:
            transport = connection.transport
            if transport is not None:
                transport.abort()

    async def close(self) -> None:
        """Stop listening, force-close open streams, and wait (boundedly) for handlers to finish.
        Turns in flight are cancelled, not drained. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if not self.listening.done():
            self.listening.cancel()
        with contextlib.suppress(BaseException):
            await self.listening
        for site in list(self._runner.sites):
            await site.stop()
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
) -> Server:
    """Serve ``handler`` on ``host:port`` (``host=None`` binds all interfaces; ``localhost`` binds
    127.0.0.1; ``port=0`` picks a free port). Call inside a running event loop; await
    ``server.listening`` for the bound port. The limits are described in
    :mod:`~fastagent_cli.serving.http_limits`."""
    if host == "localhost":
        host = "127.0.0.1"
    limits = {
        "max_connections": max_connections,
        "headers_timeout": headers_timeout,
        "request_timeout": request_timeout,
    }
    return Server(handler, port=port, host=host or None, close_timeout=close_timeout, limits=limits)


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
