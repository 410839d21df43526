"""``GET /.well-known/agent-card.json``: the A2A agent card.

Name and version (fastagent's), the description from the persona, one skill per ``skills/``
entry (a ``chat`` skill when there are none), the JSON-RPC endpoint for A2A 1.0 and 0.3
(``supportedInterfaces``, plus 0.3's ``url`` / ``preferredTransport`` / ``protocolVersion``),
streaming on, push notifications off, text in and out. With a token, the bearer scheme
(``securitySchemes`` and ``securityRequirements``, with 0.3's ``security``). The card is public,
as discovery needs; the endpoint is what the token guards.

The endpoint's address is the one the client reached the card at (its ``Host``, which the request
guard has already checked; ``https`` when a proxy says ``X-Forwarded-Proto: https``), so the card
is right on loopback, on a LAN address and behind a tunnel alike.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from fastagent_cli.serving.face_kit import AgentIdentity
from fastagent_cli.serving.invoke_auth import InvokeToken
from fastagent_cli.serving.router import Handler

__all__ = ["CARD_KEY", "agent_card", "create_card_handler"]

CARD_KEY = "GET /.well-known/agent-card.json"


def base_url(request: web.BaseRequest) -> str:
    forwarded = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    scheme = "https" if forwarded == "https" else request.scheme
    return f"{scheme}://{request.host}"


def agent_card(identity: AgentIdentity, endpoint: str, token: InvokeToken | None) -> dict[str, Any]:
    skills = [
        {"id": s.name, "name": s.name, "description": s.description, "tags": ["skill"]}
        for s in identity.skills()
    ] or [{"id": "chat", "name": "Chat", "description": identity.description, "tags": ["chat"]}]
    card: dict[str, Any] = {
        "name": identity.name,
        "description": identity.description,
        "version": identity.version,
        "supportedInterfaces": [
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "url": endpoint,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "capabilities": {"streaming": True, "pushNotifications": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills,
    }
    if token is not None:
        card["securitySchemes"] = {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "FASTAGENT_TOKEN"}}
        }
        card["securityRequirements"] = [{"schemes": {"bearer": {"list": []}}}]
        card["security"] = [{"bearer": []}]
    return card


def create_card_handler(identity: AgentIdentity, path: str, token: InvokeToken | None) -> Handler:
    async def card(request: web.BaseRequest) -> web.StreamResponse:
        body = agent_card(identity, f"{base_url(request)}{path}", token)
        return web.Response(text=json.dumps(body, ensure_ascii=False), content_type="application/json")

    return card
