"""``/mcp``: the MCP streamable HTTP transport (handshake-era revisions, 2025-03-26 to 2025-11-25).

* ``POST /mcp`` carries one JSON-RPC message (``Content-Type: application/json``, at most the
  host's 1 MiB body cap; a batch array is refused, as 2025-06-18 removed them). ``initialize``
  opens a session: the answer carries ``Mcp-Session-Id``, which every later request must send
  (missing: ``400``; unknown or ended: ``404``, so the client starts over). A notification or a
  response is ``202`` with no body. ``tools/call`` is answered as ``text/event-stream``: its
  ``notifications/progress`` and then its result, one ``event: message`` each, with a ``: ping``
  comment every 30 s while the turn is silent; every other request is answered as JSON.
* ``GET /mcp`` is ``405``: this server sends nothing unasked (the protocol allows that answer).
* ``DELETE /mcp`` ends the session (``204``) and aborts its running turns.
* A client that drops a ``tools/call`` stream aborts that turn: nothing can resume it (no event
  ids are sent), so its answer could never be delivered. A new ``ask`` on that session (here or on
  ``/invoke``) first waits for the abort to settle, so it is not answered "busy".
* ``MCP-Protocol-Version`` (sent after the handshake), when present, must be a served revision
  (``400`` otherwise). With a token (see :mod:`~fastagent_cli.serving.invoke_auth`) every request
  needs ``Authorization: Bearer <token>`` (``401`` first). ``Host`` and ``Origin`` are checked for
  every route by the request guard, which is the DNS-rebinding defence the protocol asks for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections import OrderedDict
from typing import Any

from aiohttp import web

from fastagent_cli.serving.body import MAX_BODY_BYTES, read_body_or_413
from fastagent_cli.serving.faces.mcp.protocol import (
    INVALID_REQUEST,
    PARSE_ERROR,
    SUPPORTED_VERSIONS,
    McpConnection,
    McpServer,
    error_message,
    is_request,
)
from fastagent_cli.serving.invoke_auth import InvokeToken, is_authorized, unauthorized
from fastagent_cli.serving.router import Handler
from fastagent_cli.serving.sse import SSE_HEADERS, KeyedStreams

__all__ = ["MAX_SESSIONS", "MCP_KEY", "PING_INTERVAL_S", "SESSION_HEADER", "create_mcp_handler"]

log = logging.getLogger("fastagent.host")

MCP_KEY = "/mcp"
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
MAX_SESSIONS = 1024
"""Open MCP sessions kept; beyond it the least recently used idle one is forgotten."""
PING_INTERVAL_S = 30.0


def _json(message: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        text=json.dumps(message, ensure_ascii=False),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def _refused(status: int, code: int, text: str, request_id: Any = None) -> web.Response:
    return _json(error_message(request_id, code, text), status)


class McpHttp:
    def __init__(self, server: McpServer, token: InvokeToken | None, streams: KeyedStreams) -> None:
        self.server = server
        self.token = token
        self.streams = streams
        self.sessions: OrderedDict[str, McpConnection] = OrderedDict()

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if self.token is not None and not is_authorized(request, self.token):
            return unauthorized()
        if request.method == "POST":
            return await self._post(request)
        if request.method == "DELETE":
            return self._delete(request)
        refused = web.Response(text="GET streams are not offered; POST JSON-RPC messages\n", status=405)
        refused.headers["Allow"] = "POST, DELETE"
        return refused

    def _delete(self, request: web.BaseRequest) -> web.Response:
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None:
            return _refused(400, INVALID_REQUEST, f"Bad Request: {SESSION_HEADER} header is required")
        connection = self.sessions.pop(session_id, None)
        if connection is None:
            return _refused(404, INVALID_REQUEST, "Session not found")
        connection.cancel_all()
        return web.Response(status=204)

    async def _post(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.content_type != "application/json":
            return _refused(
                415, INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json"
            )
        raw = await read_body_or_413(request, MAX_BODY_BYTES, "body too large\n")
        if isinstance(raw, web.Response):
            return raw
        try:
            message = json.loads(raw)
        except (ValueError, RecursionError):
            return _refused(400, PARSE_ERROR, "Parse error: the body is not JSON")
        if isinstance(message, list):
            return _refused(400, INVALID_REQUEST, "Invalid Request: JSON-RPC batches are not supported")
        version = request.headers.get(VERSION_HEADER)
        if version is not None and version not in SUPPORTED_VERSIONS:
            served = ", ".join(SUPPORTED_VERSIONS)
            return _refused(
                400, INVALID_REQUEST, f"Bad Request: unsupported {VERSION_HEADER} {version} ({served})"
            )
        headers: dict[str, str] = {}
        if is_request(message) and message["method"] == "initialize":
            connection = self._open()
            headers[SESSION_HEADER] = next(reversed(self.sessions))
        else:
            session_id = request.headers.get(SESSION_HEADER)
            request_id = message.get("id") if isinstance(message, dict) else None
            if session_id is None:
                text = f"Bad Request: {SESSION_HEADER} header is required (send initialize first)"
                return _refused(400, INVALID_REQUEST, text, request_id)
            found = self.sessions.get(session_id)
            if found is None:
                return _refused(404, INVALID_REQUEST, "Session not found", request_id)
            self.sessions.move_to_end(session_id)
            connection = found
        if not is_request(message):
            await connection.handle(message, _no_notify)
            return web.Response(status=202)
        if message["method"] == "tools/call":
            session = _ask_session(message)
            if session is None:
                return await _stream(request, connection, message, asyncio.Event())
            await self.streams.reclaim(session)  # a stream on it whose client left: let it settle
            with self.streams.holding(session, request) as stop:
                return await _stream(request, connection, message, stop)
        answer = await connection.handle(message, _no_notify)
        if answer is None:
            return web.Response(status=202)
        return _json(answer, headers=headers)

    def _open(self) -> McpConnection:
        while len(self.sessions) >= MAX_SESSIONS:
            idle = next((key for key, c in self.sessions.items() if not c.busy), None)
            if idle is None:
                break
            del self.sessions[idle]
        connection = McpConnection(self.server)
        self.sessions[secrets.token_urlsafe(24)] = connection
        return connection


async def _no_notify(message: dict[str, Any]) -> None:
    return None


def _ask_session(message: Any) -> str | None:
    """The session a ``tools/call`` of ``ask`` continues, if it names one."""
    params = message.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    session = arguments.get("session") if isinstance(arguments, dict) else None
    return session if isinstance(session, str) and session else None


async def _stream(
    request: web.BaseRequest, connection: McpConnection, message: Any, stop: asyncio.Event
) -> web.StreamResponse:
    """Answer one request as an SSE stream: its notifications as they come, then its answer.
    ``stop`` (a new request on the same session found this client gone) ends it, aborting the
    turn."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def notify(notification: dict[str, Any]) -> None:
        queue.put_nowait(notification)

    response = web.StreamResponse(status=200, headers=SSE_HEADERS)
    await response.prepare(request)
    work = asyncio.ensure_future(connection.handle(message, notify))
    stopping = asyncio.ensure_future(stop.wait())
    try:
        while True:
            getting = asyncio.ensure_future(queue.get())
            waits = {getting, work, stopping}
            done, _ = await asyncio.wait(waits, timeout=PING_INTERVAL_S, return_when="FIRST_COMPLETED")
            if stopping in done:
                getting.cancel()
                return response
            if getting in done:
                await response.write(_event(getting.result()))
                continue
            getting.cancel()
            if work in done:
                while not queue.empty():
                    await response.write(_event(queue.get_nowait()))
                answer = work.result()
                if answer is not None:
                    await response.write(_event(answer))
                await response.write_eof()
                return response
            await response.write(b": ping\n\n")
    finally:
        stopping.cancel()
        if not work.done():
            work.cancel()  # the client left (or the host is closing): the turn is aborted
            with contextlib.suppress(BaseException):
                await work


def _event(message: dict[str, Any]) -> bytes:
    return f"event: message\ndata: {json.dumps(message, ensure_ascii=False)}\n\n".encode()


def create_mcp_handler(
    server: McpServer, token: InvokeToken | None = None, streams: KeyedStreams | None = None
) -> Handler:
    """The ``/mcp`` handler (route it as ``"/mcp"``, any method). ``streams``: the streams in
    flight per session, shared with ``/invoke`` (a turn on a session whose client left is
    reclaimed whichever entry asks next)."""
    return McpHttp(server, token, KeyedStreams() if streams is None else streams).handle
