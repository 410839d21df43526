"""Helpers for route handlers and channel authors: a capped body read and plain-text answers.

::

    from fastagent_cli.serving import read_body_capped, text_response

    async def webhook(request):
        raw = await read_body_capped(request, 1 << 20)
        if raw is None:
            return text_response("body too large\\n", 413)
        ...
        return text_response("ok\\n", 200)
"""

from __future__ import annotations

from aiohttp import web

__all__ = ["MAX_BODY_BYTES", "TEXT_CONTENT_TYPE", "read_body_capped", "text_response"]

MAX_BODY_BYTES = 1 << 20
"""1 MiB: the body cap of ``/invoke`` (and the usual webhook cap)."""

TEXT_CONTENT_TYPE = "text/plain"


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
