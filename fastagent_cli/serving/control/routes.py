"""The ``/control`` routes: the session hub published over HTTP (``docs/control-plane.md``).

===========================================  =================================================
``GET    /control/capabilities``             what this deployment allows
``GET    /control/commands``                 the agent's skills (re-read per call)
``GET    /control/sessions``                 the conversation list (503 ``{code: sessions_unavailable}``)
``PUT    /control/sessions/{id}``            ``{from, at}``: fork into ``{id}`` (idempotent)
``GET    /control/sessions/{id}``            state
``PATCH  /control/sessions/{id}``            ``{name?, model?, thinkingLevel?, leafEntryId?}``
``DELETE /control/sessions/{id}``            irreversible; ends the session's event streams
``GET    /control/sessions/{id}/entries``    ``?since=<entry id>``
``GET    /control/sessions/{id}/events``     SSE: ``data: {sessionId, epoch, seq, event}``
``POST   /control/sessions/{id}/actions``    ``{type: steer|follow_up|abort|compact, ...}``
``POST   /control/sessions/{id}/approvals/{a}``  ``{decision: approve|deny, reason?, by?}``: 404
                                             ``no_such_approval``, 409 ``approval_closed``
``POST   /control/invoke``                   the data plane: ``{session, text, images?,
                                             documents?}``, SSE like /invoke;
                                             ``detach: true``: an ActionResult, the run goes on
===========================================  =================================================

Beside them, on the same hub, token and event fan-out: the TypeScript original 0.18's set
(``/control/state|entries|events?session=`` and ``POST /control/dispatch``,
:mod:`.dispatch_routes`). ``capabilities`` names both in ``routes: ["sessions", "dispatch"]``.

Results of writes and actions ride HTTP 200 as ``{"ok": true, "runId"?}`` or
``{"ok": false, "error": {"code", "message", "retryable"}}``. Bodies are capped at 1 MiB
(``413 body too large (limit 1 MiB — images and documents count base64-inflated)``); a body that
is not JSON is ``400 invalid JSON``; an empty body reads as ``{}``.
"""

from __future__ import annotations

import asyncio
import json
import uuid

from aiohttp import web

from fastagent_cli import telemetry
from fastagent_cli.contract import Agent
from fastagent_cli.control import (
    INVALID_COMMAND,
    SESSIONS_UNAVAILABLE,
    ActionResult,
    ControlError,
    SessionControl,
    SessionsUnavailable,
    parse_update,
    rejected,
    run_action,
)
from fastagent_cli.control.wire import parse_action_or_reason
from fastagent_cli.serving.body import MAX_BODY_BYTES, parse_off_loop, read_body_or_413, text_response
from fastagent_cli.serving.control.answers import ANSWER_STATUS, parse_answer
from fastagent_cli.serving.control.detached import DetachedRuns
from fastagent_cli.serving.control.dispatch_routes import dispatch_routes
from fastagent_cli.serving.control.fanout import EventFanout
from fastagent_cli.serving.control.plane import CORS_HEADERS, ITEM, SESSION, PlaneHandler, PlaneRoute, item_of
from fastagent_cli.serving.control.replies import (
    BODY_TOO_LARGE,
    action_span,
    entries_handler,
    events_handler,
    json_response,
    read_json,
    settle_span,
)
from fastagent_cli.serving.invoke_http import parse_invoke_body
from fastagent_cli.serving.sse import stream_events

__all__ = ["BODY_TOO_LARGE", "ROUTE_SETS", "control_routes"]

ROUTE_SETS = ("sessions", "dispatch")
"""The route sets this plane serves, as ``capabilities.routes`` names them."""

FORK_USAGE = "expected { from: string, at: string }\n"
DETACH_TYPE = '"detach" must be a boolean\n'


def control_routes(
    control: SessionControl, agent: Agent | None = None, detached: DetachedRuns | None = None
) -> list[PlaneRoute]:
    """The plane's routes over ``control`` (``POST /control/invoke`` too when ``agent`` is given;
    its detached runs are kept in ``detached``, a new registry when none is given)."""
    epoch = str(uuid.uuid4())
    sessions = control.sessions
    fanout = EventFanout(sessions, epoch)

    async def capabilities(request: web.BaseRequest, _: str) -> web.StreamResponse:
        return json_response({**(await control.capabilities()).to_json(), "routes": list(ROUTE_SETS)})

    async def commands(request: web.BaseRequest, _: str) -> web.StreamResponse:
        return json_response([c.to_json() for c in await control.commands()])

    async def listing(request: web.BaseRequest, _: str) -> web.StreamResponse:
        try:
            found = await sessions.list()
        except SessionsUnavailable as exc:
            # The original's error body: the code at the top level, where its remote client
            # (ControlRequestError.code) reads it.
            return json_response(ControlError(SESSIONS_UNAVAILABLE, exc.message, True).to_json(), 503)
        return json_response([s.to_json() for s in found])

    async def fork(request: web.BaseRequest, session: str) -> web.StreamResponse:
        body = await read_json(request)
        if isinstance(body, web.Response):
            return body
        source = body.get("from") if isinstance(body, dict) else None
        at = body.get("at") if isinstance(body, dict) else None
        if not isinstance(source, str) or not isinstance(at, str):
            return text_response(FORK_USAGE, 400)
        return json_response((await sessions.fork(source, at, session)).to_json())

    async def state(request: web.BaseRequest, session: str) -> web.StreamResponse:
        return json_response((await sessions.get(session).state()).to_json())

    async def update(request: web.BaseRequest, session: str) -> web.StreamResponse:
        body = await read_json(request)
        if isinstance(body, web.Response):
            return body
        patch = parse_update(body)
        if isinstance(patch, ActionResult):
            return json_response(patch.to_json())
        return json_response((await sessions.get(session).update(patch)).to_json())

    async def delete(request: web.BaseRequest, session: str) -> web.StreamResponse:
        return json_response((await sessions.get(session).delete()).to_json())

    entries = entries_handler(sessions)
    events = events_handler(fanout)

    async def actions(request: web.BaseRequest, session: str) -> web.StreamResponse:
        body = await read_json(request)
        if isinstance(body, web.Response):
            return body
        prompt = body.get("prompt") if isinstance(body, dict) else None
        files = isinstance(prompt, dict) and bool(prompt.get("images") or prompt.get("documents"))
        # a prompt's files are checked (their base64 decoded) in a thread, off the event loop
        action = (
            await asyncio.to_thread(parse_action_or_reason, body) if files else parse_action_or_reason(body)
        )
        if isinstance(action, str):
            return json_response(rejected(INVALID_COMMAND, action).to_json())
        with action_span(request, "POST /control/sessions/{id}/actions", session, action.type) as span:
            result = await run_action(sessions.get(session), action)
            settle_span(span, result)
        return json_response(result.to_json())

    async def approval(request: web.BaseRequest, session: str) -> web.StreamResponse:
        body = await read_json(request)
        if isinstance(body, web.Response):
            return body
        parsed = parse_answer(body)
        if isinstance(parsed, ActionResult):
            return json_response(parsed.to_json(), 400)
        decision, reason, by = parsed
        result = await sessions.get(session).answer_approval(item_of(request), decision, by=by, reason=reason)
        return json_response(result.to_json(), ANSWER_STATUS.get(result.code or "", 200))

    routes = [
        PlaneRoute("GET", ("capabilities",), capabilities),
        PlaneRoute("GET", ("commands",), commands),
        PlaneRoute("GET", ("sessions",), listing),
        PlaneRoute("PUT", ("sessions", SESSION), fork),
        PlaneRoute("GET", ("sessions", SESSION), state),
        PlaneRoute("PATCH", ("sessions", SESSION), update),
        PlaneRoute("DELETE", ("sessions", SESSION), delete),
        PlaneRoute("GET", ("sessions", SESSION, "entries"), entries),
        PlaneRoute("GET", ("sessions", SESSION, "events"), events),
        PlaneRoute("POST", ("sessions", SESSION, "actions"), actions),
        PlaneRoute("POST", ("sessions", SESSION, "approvals", ITEM), approval),
        *dispatch_routes(control, fanout),
    ]
    if agent is not None:
        runs = detached if detached is not None else DetachedRuns()
        routes.append(PlaneRoute("POST", ("invoke",), _invoke_route(agent, control, runs)))
    return routes


def _invoke_route(agent: Agent, control: SessionControl, detached: DetachedRuns) -> PlaneHandler:
    async def invoke(request: web.BaseRequest, _: str) -> web.StreamResponse:
        raw = await read_body_or_413(request, MAX_BODY_BYTES, BODY_TOO_LARGE)
        if isinstance(raw, web.Response):
            return raw
        parsed = await parse_off_loop(parse_invoke_body, raw)
        if isinstance(parsed, str):
            return text_response(parsed, 400)
        body = json.loads(raw)  # parse_invoke_body read it: a JSON object
        detach = body.get("detach", False)
        if not isinstance(detach, bool):
            return text_response(DETACH_TYPE, 400)
        scope, prompt = parsed
        with telemetry.root_span(
            "POST /control/invoke",
            trigger="control",
            traceparent=request.headers.get("traceparent"),
            attributes={"fastagent.control.detach": detach, "gen_ai.conversation.id": scope.session},
        ):
            if detach:  # the run's task starts inside the span: its trace outlives this request
                result = await detached.start(agent, control.sessions.get(scope.session), scope, prompt)
                return json_response(result.to_json())
            return await stream_events(request, agent.invoke(scope, prompt), headers=CORS_HEADERS)

    return invoke
