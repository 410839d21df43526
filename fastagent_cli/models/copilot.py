"""What every GitHub Copilot request carries besides the catalog's static headers, and where its API
lives.

Copilot fronts OpenAI-compatible, Responses and Anthropic endpoints on one host; the static
identity headers (``Editor-Version``, ``Copilot-Integration-Id``, ...) are the catalog's provider
headers. Per request it wants ``X-Initiator`` (``user`` when the last message is the user's, else
``agent`` for a follow-up after tool results), ``Openai-Intent: conversation-edits`` and, when an
image is in the context, ``Copilot-Vision-Request: true``. Its short-lived API token names the
host to call: ``...;proxy-ep=proxy.individual.githubcopilot.com;...`` means
``https://api.individual.githubcopilot.com``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fastagent_cli.models.types import Message, ModelRequest

__all__ = ["COPILOT_PROVIDER", "DEFAULT_COPILOT_BASE_URL", "copilot_base_url", "copilot_headers"]

COPILOT_PROVIDER = "github-copilot"
DEFAULT_COPILOT_BASE_URL = "https://api.individual.githubcopilot.com"
_PROXY_ENDPOINT = re.compile(r"(?:^|;)\s*proxy-ep=([^;]+)")


def _has_image(messages: Sequence[Message]) -> bool:
    return any(
        message["role"] in ("user", "toolResult")
        and isinstance(message["content"], list)
        and any(block["type"] == "image" for block in message["content"])
        for message in messages
    )


def copilot_headers(request: ModelRequest) -> dict[str, str]:
    """The per-request headers, or ``{}`` for any other provider."""
    if request.model.provider != COPILOT_PROVIDER:
        return {}
    last = request.messages[-1] if request.messages else None
    headers = {
        "X-Initiator": "agent" if last is not None and last["role"] != "user" else "user",
        "Openai-Intent": "conversation-edits",
    }
    if _has_image(request.messages):
        headers["Copilot-Vision-Request"] = "true"
    return headers


def copilot_base_url(token: str, enterprise_domain: str | None = None) -> str:
    """The API origin a Copilot token points at (``proxy.`` host becomes ``api.``)."""
    match = _PROXY_ENDPOINT.search(token)
    if match:
        host = match.group(1).strip()
        return "https://" + re.sub(r"^proxy\.", "api.", host)
    if enterprise_domain:
        return f"https://copilot-api.{enterprise_domain}"
    return DEFAULT_COPILOT_BASE_URL
