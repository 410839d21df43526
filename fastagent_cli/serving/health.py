"""``GET /health``: ``200 ok`` once serving is ready, ``503 starting`` until every long connection
has first become ready (deployment probes and webhook registrars poll it), and ``503 degraded``
while the state store cannot be reached (the PostgreSQL backend during an outage; it reconnects by
itself and the answer is ``ok`` again)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from fastagent_cli.serving.body import text_response
from fastagent_cli.serving.router import Handler

__all__ = ["HEALTH_KEY", "create_health_handler"]

HEALTH_KEY = "GET /health"


DEGRADED = "degraded: the state database cannot be reached\n"


def create_health_handler(
    is_ready: Callable[[], bool] = lambda: True, store_reachable: Callable[[], bool] = lambda: True
) -> Handler:
    async def health(request: web.BaseRequest) -> web.StreamResponse:
        if not store_reachable():
            return text_response(DEGRADED, 503)
        if is_ready():
            return text_response("ok\n", 200)
        return text_response("starting\n", 503)

    return health
