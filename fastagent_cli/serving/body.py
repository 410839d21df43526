"""Helpers for route handlers and channel authors: a capped body read and plain-text answers.

::

    from fastagent_cli.serving import read_body_capped, text_response

    async def webhook(request):
        raw = await read_body_capped(request, 1 << 20)
        if raw is None:
            return text_response("body too large\\n", 413)
        ...
        return text_response("ok\\n", 200)

The request preamble every webhook and JSON route of the host shares (``/invoke``, ``/control``,
the first-party channels) is here too, so that it answers one way everywhere:

* :func:`refuse_method`: a method other than POST is ``405 "POST only\\n"`` with ``Allow: POST``;
* :func:`read_body_or_413`: a body over the cap is ``413`` and the connection is closed after the
  answer (the rest of the body is never read: a client that keeps sending does not hold the
  connection, and nothing it sends after the cap is taken for a next request);
* :func:`read_post_body`: both, in that order;
* :func:`json_object_or_400`: a body that is not a JSON object is ``400 "invalid json\\n"``;
* :func:`parse_off_loop`: a body large enough to carry files (base64 images, PDFs) parsed in a
  thread: checking their base64 takes about 10 ms a MiB, which the event loop does not wait for.

Each answers the request's bytes or value, or the :class:`~aiohttp.web.Response` to return.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web

__all__ = [
    "INVALID_JSON",
    "MAX_BODY_BYTES",
    "PAYLOAD_TOO_LARGE",
    "POST_ONLY",
    "TEXT_CONTENT_TYPE",
    "json_object_or_400",
    "parse_off_loop",
    "read_body_capped",
    "read_body_or_413",
    "read_post_body",
    "refuse_method",
    "text_response",
    "too_large",
]

MAX_BODY_BYTES = 1 << 20
"""1 MiB: the body cap of ``/invoke`` (and the usual webhook cap)."""

TEXT_CONTENT_TYPE = "text/plain"
POST_ONLY = "POST only\n"
PAYLOAD_TOO_LARGE = "payload too large\n"
INVALID_JSON = "invalid json\n"
OFF_LOOP_BYTES = 64 * 1024
"""A body at least this large is parsed off the event loop (:func:`parse_off_loop`)."""

T = TypeVar("T")


async def parse_off_loop(parse: Callable[[bytes], T], raw: bytes) -> T:
    """``parse(raw)``: at once for a small body, in a thread for one of :data:`OFF_LOOP_BYTES` or
    more (one that carries files, whose base64 the parse decodes to check it)."""
    if len(raw) < OFF_LOOP_BYTES:
        return parse(raw)
    return await asyncio.to_thread(parse, raw)


async def read_body_capped(request: web.BaseRequest, max_bytes: int) -> bytes | None:
    """The request body, or ``None`` once more than ``max_bytes`` bytes have arrived.

    The cap counts the bytes actually received, chunk by chunk, never ``Content-Length`` (a
    chunked upload has none, and a lying one must not matter). Reading stops at the cap: the rest
    of an oversized body is never buffered (the server discards it after answering). Answer
    ``None`` with :func:`text_response` (``"body too large\\n"``, 413).
    """
    parts: list[bytes] = []
    received = 0
    content = request.content
    while True:
        chunk = await content.readany()
        if not chunk:
            return b"".join(parts)
        received += len(chunk)
        if received > max_bytes:
            return None
        parts.append(chunk)


def text_response(body: str, status: int) -> web.Response:
    """A ``text/plain`` (UTF-8) response, the shape of every error the host answers itself."""
    return web.Response(text=body, status=status, content_type=TEXT_CONTENT_TYPE)


def refuse_method(request: web.BaseRequest) -> web.Response | None:
    """``405 "POST only"`` (with ``Allow: POST``) for a method other than POST, else ``None``."""
    if request.method == "POST":
        return None
    refused = text_response(POST_ONLY, 405)
    refused.headers["Allow"] = "POST"
    return refused


def too_large(body: str = PAYLOAD_TOO_LARGE) -> web.Response:
    """The ``413``; the connection closes after it (the unread rest of the body is never taken in)."""
    refused = text_response(body, 413)
    refused.force_close()
    return refused


async def read_body_or_413(
    request: web.BaseRequest, max_bytes: int = MAX_BODY_BYTES, too_large_body: str = PAYLOAD_TOO_LARGE
) -> bytes | web.Response:
    """The body (at most ``max_bytes``, counted as it arrives), or :func:`too_large`."""
    raw = await read_body_capped(request, max_bytes)
    return too_large(too_large_body) if raw is None else raw


async def read_post_body(
    request: web.BaseRequest, max_bytes: int = MAX_BODY_BYTES, too_large_body: str = PAYLOAD_TOO_LARGE
) -> bytes | web.Response:
    """:func:`refuse_method`, then :func:`read_body_or_413`."""
    refused = refuse_method(request)
    if refused is not None:
        return refused
    return await read_body_or_413(request, max_bytes, too_large_body)


def json_object_or_400(raw: bytes, invalid: str = INVALID_JSON) -> dict[str, Any] | web.Response:
    """``raw`` as a JSON object, or ``400`` (``invalid``) when it is not one (nor JSON at all)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return text_response(invalid, 400)
    return value if isinstance(value, dict) else text_response(invalid, 400)
