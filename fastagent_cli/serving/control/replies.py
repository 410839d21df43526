"""The JSON replies, request bodies and read handlers both ``/control`` route sets share."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from fastagent_cli.serving.body import MAX_BODY_BYTES, read_body_or_413, text_response
from fastagent_cli.serving.sse import SSE_HEADERS

if TYPE_CHECKING:
    from fastagent_cli.control.protocol import SessionCollection
    from fastagent_cli.serving.control.fanout import EventFanout

__all__ = ["BODY_TOO_LARGE", "Handler", "entries_handler", "events_handler", "json_response", "read_json"]

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
