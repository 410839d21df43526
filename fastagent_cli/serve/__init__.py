"""Serving: the aiohttp host, the literal router, ``POST /invoke`` over SSE, ``GET /health``,
channel modules and :func:`create_agent_service` (what ``dev`` / ``start`` run).

Importing this package imports aiohttp; the CLI imports it only inside the serving commands.
"""

from __future__ import annotations

import sys
import types

from fastagent_cli.serve.body import MAX_BODY_BYTES, read_body_capped, text_response
from fastagent_cli.serve.channels import (
    ChannelContext,
    ChannelFailure,
    LoadedChannels,
    LongConnection,
    LongConnectionChannel,
    load_channels,
)
from fastagent_cli.serve.health import create_health_handler
from fastagent_cli.serve.host import CLOSE_TIMEOUT_S, Server, serve
from fastagent_cli.serve.invoke_http import create_invoke_handler
from fastagent_cli.serve.long_connections import CloseCallback, LongConnections
from fastagent_cli.serve.router import Handler, RouteKey, Routes, build_router, parse_route_key
from fastagent_cli.serve.service import AgentService, ChannelsSummary, create_agent_service

__all__ = [
    "MAX_BODY_BYTES",
    "AgentService",
    "ChannelContext",
    "ChannelFailure",
    "ChannelsSummary",
    "CloseCallback",
    "Handler",
    "LoadedChannels",
    "LongConnection",
    "LongConnectionChannel",
    "LongConnections",
    "RouteKey",
    "Routes",
    "Server",
    "build_router",
    "create_agent_service",
    "create_health_handler",
    "create_invoke_handler",
    "load_channels",
    "parse_route_key",
    "read_body_capped",
    "serve",
    "text_response",
]


class _ServePackage(types.ModuleType):
    """``fastagent_cli.serve`` names both this package and the public :func:`serve` function.

    Importing the package sets ``fastagent_cli.serve`` to the package (the import system does that
    after this file runs), so the package itself forwards calls: ``fastagent_cli.serve(handler,
    port=0)`` works whichever of the two the attribute holds.
    """

    def __call__(
        self, handler: Handler, *, port: int, host: str | None = None, close_timeout: float = CLOSE_TIMEOUT_S
    ) -> Server:
        return serve(handler, port=port, host=host, close_timeout=close_timeout)


sys.modules[__name__].__class__ = _ServePackage
