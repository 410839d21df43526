"""The JSON replies, request bodies, read handlers and action spans both ``/control`` route sets
share."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from aiohttp import web

from fastagent_cli import telemetry
from fastagent_cli.serving.body import MAX_BODY_BYTES, read_body_or_413, text_response
from fastagent_cli.serving.sse import SSE_HEADERS

if TYPE_CHECKING:
    from fastagent_cli.control import ActionResult
    from fastagent_cli.control.protocol import SessionCollection
    from fastagent_cli.serving.control.fanout import EventFanout

__all__ = [
    "BODY_TOO_LARGE",
    "Handler",
    "action_span",
    "entries_handler",
    "events_handler",
    "json_response",
    "read_json",
    "settle_span",
]

BODY_TOO_LARGE = (
    f"body too large (limit {MAX_BODY_BYTES >> 20} MiB — images and documents count base64-inflated)\n"
)


def json_response(value: Any, status: int = 200) -> web.Response:
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"
    return web.Response(text=body, status=status, content_type="application/json")


async def read_json(request: web.BaseRequest) -> Any | web.Response:
    raw = await read_body_or_413(request, MAX_BODY_BYTES, BODY_TOO_LARGE)
    if isinstance(raw, web.Response):
        return raw
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return text_response("invalid JSON\n", 400)


Handler = Callable[[web.BaseRequest, str], Awaitable[web.StreamResponse]]
"""A control route's handler: the request and the session it names."""


def entries_handler(sessions: SessionCollection) -> Handler:
    """``entries(since)`` of the session, as JSON (both route sets)."""

    async def entries(request: web.BaseRequest, session: str) -> web.StreamResponse:
        since = request.query.get("since")
        return json_response((await sessions.get(session).entries(since)).to_json())

    return entries


def events_handler(fanout: EventFanout) -> Handler:
    """The session's event stream over SSE (``HEAD`` answers the headers only), both route sets."""

    async def events(request: web.BaseRequest, session: str) -> web.StreamResponse:
        if request.method == "HEAD":
            return web.Response(status=200, headers=SSE_HEADERS)
        return await fanout.respond(request, session)

    return events


def action_span(
    request: web.BaseRequest, route: str, session: str, action: str
) -> AbstractContextManager[telemetry.Span | None]:
    """The root span of a control-plane action (``trigger: control``; the caller's ``traceparent``
    continued): a run the action starts (a ``follow_up`` on an idle session) is its child."""
    return telemetry.root_span(
        route,
        trigger="control",
        traceparent=request.headers.get("traceparent"),
        attributes={"fastagent.control.action": action, "gen_ai.conversation.id": session},
    )


def settle_span(span: telemetry.Span | None, result: ActionResult) -> None:
    """A refused action: the span's status is the refusal, its code in ``error.type``."""
    if span is not None and not result.ok and result.error is not None:
        span.fail(result.error.message, result.error.code)
