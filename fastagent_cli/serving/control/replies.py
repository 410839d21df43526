"""The JSON replies and request bodies both ``/control`` route sets share."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from fastagent_cli.serving.body import MAX_BODY_BYTES, read_body_or_413, text_response

__all__ = ["BODY_TOO_LARGE", "json_response", "read_json"]

BODY_TOO_LARGE = f"body too large (limit {MAX_BODY_BYTES >> 20} MiB — images count base64-inflated)\n"


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
