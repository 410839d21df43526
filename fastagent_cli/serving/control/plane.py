"""The ``/control`` prefix as one mounted handler: bearer auth, CORS, and its own little router.

* Every reply carries the CORS method and header lists (routes, the ``OPTIONS`` preflight, 401,
  404, 405, 413 and a handler that fails); ``Access-Control-Allow-Origin`` is added by the
  server's :class:`~fastagent_cli.serving.request_guard.RequestGuard`, for the configured
  ``[http] allowed_origins`` only (never ``*``).
* Every request but a preflight needs ``Authorization: Bearer <token>``, compared in constant
  time: ``401 unauthorized`` otherwise (before any routing, so a stranger learns nothing).
* Paths are matched as they arrive (no decoding) segment by segment; the variable segments,
  ``{session}`` (and an approval's ``{item}``), are percent-decoded (a segment that is not valid
  percent-encoded UTF-8 matches nothing). A path known under another method answers ``405``
  (with ``Allow``), an unknown one ``404``; ``HEAD`` is answered from ``GET`` without a body.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from aiohttp import web

from fastagent_cli.serving.body import text_response
from fastagent_cli.serving.invoke_auth import InvokeToken, is_authorized, unauthorized
from fastagent_cli.serving.router import Handler, path_of

__all__ = [
    "CONTROL_PREFIX",
    "CORS_HEADERS",
    "ITEM",
    "SESSION",
    "PlaneHandler",
    "PlaneRoute",
    "item_of",
    "mount_plane",
]

log = logging.getLogger("fastagent.control")

CONTROL_PREFIX = "/control"
SESSION = "{session}"
"""The variable segment of a route pattern: a percent-encoded session id."""
ITEM = "{item}"
"""A second variable segment (an approval id): matched like ``{session}``, read with
:func:`item_of`."""

CORS_HEADERS: Mapping[str, str] = {
    "Access-Control-Allow-Methods": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": "authorization, content-type, last-event-id",
    "Access-Control-Max-Age": "600",
}

PlaneHandler = Callable[[web.BaseRequest, str], Awaitable[web.StreamResponse]]
"""``(request, session)``: ``session`` is the decoded ``{session}`` segment (``""`` when none)."""

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


@dataclass(frozen=True, slots=True)
class PlaneRoute:
    method: str
    pattern: tuple[str, ...]
    """Path segments below the prefix; :data:`SESSION` marks the session id."""
    handler: PlaneHandler


def _decode(segment: str) -> str | None:
    if not segment or _BAD_ESCAPE.search(segment):
        return None
    try:
        return unquote(segment, errors="strict")
    except UnicodeDecodeError:
        return None


def _match(pattern: Sequence[str], segments: Sequence[str]) -> str | None:
    """The session a path names under ``pattern`` (``""`` without one); ``None``: no match."""
    if len(pattern) != len(segments):
        return None
    session = ""
    for expected, actual in zip(pattern, segments, strict=True):
        if expected in (SESSION, ITEM):
            decoded = _decode(actual)
            if decoded is None:
                return None
            if expected == SESSION:
                session = decoded
        elif expected != actual:
            return None
    return session


def item_of(request: web.BaseRequest) -> str:
    """The decoded last segment of the request's path (a route's trailing :data:`ITEM`)."""
    return _decode(path_of(request).rsplit("/", 1)[-1]) or ""


def _with_cors(response: web.StreamResponse) -> web.StreamResponse:
    if not response.prepared:
        response.headers.update(CORS_HEADERS)
    return response


def mount_plane(routes: Sequence[PlaneRoute], token: str) -> Handler:
    """The handler owning :data:`CONTROL_PREFIX` (mount it with ``build_router(mounts=...)``)."""
    if not token:
        raise ValueError("the control plane needs a token: without one it refuses to mount")
    secret = InvokeToken(token, "session control")

    async def answer(request: web.BaseRequest) -> web.StreamResponse:
        if request.method == "OPTIONS":
            return web.Response(status=204)
        if not is_authorized(request, secret):
            return unauthorized()
        below = path_of(request)[len(CONTROL_PREFIX) :]
        segments = below.split("/")[1:]  # the router mounts "/control" and "/control/..." only
        method = "GET" if request.method == "HEAD" else request.method
        allowed: list[str] = []
        for route in routes:
            session = _match(route.pattern, segments)
            if session is None:
                continue
            if route.method == method:
                return await route.handler(request, session)
            allowed.append(route.method)
        if allowed:
            refused = text_response("method not allowed\n", 405)
            refused.headers["Allow"] = ", ".join(sorted({*allowed, *(["HEAD"] if "GET" in allowed else [])}))
            return refused
        return text_response("not found\n", 404)

    async def plane(request: web.BaseRequest) -> web.StreamResponse:
        try:
            return _with_cors(await answer(request))
        except web.HTTPException:
            raise
        except Exception:
            if request.writer is not None and request.writer.output_size:
                raise  # the reply already started: the host cuts the connection
            log.exception("[control] %s %s failed", request.method, request.raw_path)
            return _with_cors(text_response("internal error\n", 500))

    return plane
