"""Serving: the aiohttp host, the literal router, ``POST /invoke`` over SSE, ``GET /health``,
channel modules and :func:`create_agent_service` (what ``dev`` / ``start`` run).

Importing this package imports aiohttp; the CLI imports it only inside the serving commands.
"""

from __future__ import annotations

from fastagent_cli.serving.body import MAX_BODY_BYTES, read_body_capped, text_response
from fastagent_cli.serving.channels import (
    ChannelContext,
    ChannelFailure,
    LoadedChannels,
    LongConnection,
    LongConnectionChannel,
    load_channels,
)
from fastagent_cli.serving.health import create_health_handler
from fastagent_cli.serving.host import Server, serve
from fastagent_cli.serving.invoke_http import create_invoke_handler
from fastagent_cli.serving.long_connections import CloseCallback, LongConnections
from fastagent_cli.serving.router import Handler, RouteKey, Routes, build_router, parse_route_key
from fastagent_cli.serving.service import AgentService, ChannelsSummary, create_agent_service

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
