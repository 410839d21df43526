"""The TypeScript original 0.18's ``/control`` route set, served beside the spec's on the same
hub, token and event fan-out (so its clients, ``connectSessionControl`` and ``fastagent attach``,
work here unchanged).

=====================================  ====================================================
``GET  /control/state?session=S``      the session's state
``GET  /control/entries?session=S``    ``&since=<entry id>``
``GET  /control/events?session=S``     SSE: ``data: {sessionId, epoch, seq, event}``
``POST /control/dispatch``             ``{session, command}``: one of the seven commands of
                                       :mod:`fastagent_cli.control.commands`
=====================================  ====================================================

A request without ``?session`` is ``400 missing ?session``; a dispatch body that is not
``{session: string, ...}`` is ``400 expected { session: string, command: SessionCommand }``; a
command that is malformed is ``200 {ok: false, error: {code: "invalid_command"}}``, as there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from fastagent_cli.control import SessionControl
from fastagent_cli.control.commands import dispatch_command
from fastagent_cli.serving.body import text_response
from fastagent_cli.serving.control.fanout import EventFanout
from fastagent_cli.serving.control.plane import PlaneRoute
from fastagent_cli.serving.control.replies import (
    action_span,
    entries_handler,
    events_handler,
    json_response,
    read_json,
    settle_span,
)

__all__ = ["DISPATCH_USAGE", "MISSING_SESSION", "dispatch_routes"]

MISSING_SESSION = "missing ?session\n"
DISPATCH_USAGE = "expected { session: string, command: SessionCommand }\n"

_Read = Callable[[web.BaseRequest, str], Awaitable[web.StreamResponse]]


def _by_query(read: _Read) -> Callable[[web.BaseRequest, str], Awaitable[web.StreamResponse]]:
    async def handler(request: web.BaseRequest, _: str) -> web.StreamResponse:
        session = request.query.get("session")
        if not session:
            return text_response(MISSING_SESSION, 400)
        return await read(request, session)

    return handler


def dispatch_routes(control: SessionControl, fanout: EventFanout) -> list[PlaneRoute]:
    sessions = control.sessions

    async def state(request: web.BaseRequest, session: str) -> web.StreamResponse:
        return json_response((await sessions.get(session).state()).to_json())

    entries = entries_handler(sessions)
    events = events_handler(fanout)

    async def dispatch(request: web.BaseRequest, _: str) -> web.StreamResponse:
        body = await read_json(request)
        if isinstance(body, web.Response):
            return body
        session = body.get("session") if isinstance(body, dict) else None
        if not isinstance(session, str) or not session:
            return text_response(DISPATCH_USAGE, 400)
        command = body.get("command")
        kind = command.get("type") if isinstance(command, dict) else None
        action = kind[:64] if isinstance(kind, str) else "invalid"
        with action_span(request, "POST /control/dispatch", session, action) as span:
            result = await dispatch_command(sessions.get(session), command)
            settle_span(span, result)
        return json_response(result.to_json())

    return [
        PlaneRoute("GET", ("state",), _by_query(state)),
        PlaneRoute("GET", ("entries",), _by_query(entries)),
        PlaneRoute("GET", ("events",), _by_query(events)),
        PlaneRoute("POST", ("dispatch",), dispatch),
    ]
