"""The subscription logins fastagent offers, by provider name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastagent_cli.auth.oauth import anthropic, github_copilot, openai_codex
from fastagent_cli.auth.oauth.common import LoginContext, LoginUI
from fastagent_cli.models.copilot import DEFAULT_COPILOT_BASE_URL

__all__ = ["OAUTH_PROVIDERS", "OAuthProvider"]

Entry = dict[str, Any]


@dataclass(frozen=True, slots=True)
class OAuthProvider:
    name: str
    title: str
    """What the user logs in with, for menus: ``Claude Pro/Max subscription``."""
    login: Callable[[LoginUI, LoginContext], Awaitable[Entry]]
    refresh: Callable[[Entry], Awaitable[Entry]]
    api_key_login: bool
    """``login`` also offers to store an API key for this provider."""
    base_url: Callable[[Entry], str] | None = None
    """The API host a login dictates (Copilot)."""
    default_base_url: str = ""
    """The catalog's host, which ``base_url`` replaces unless ``models.json`` changed it."""
    from_environment: Callable[[str], Awaitable[Entry]] | None = None
    """Turns a token from the provider's environment variable into a login entry (Copilot)."""


OAUTH_PROVIDERS: dict[str, OAuthProvider] = {
    "anthropic": OAuthProvider(
        "anthropic", "Claude Pro/Max subscription", anthropic.login, anthropic.refresh, api_key_login=True
    ),
    "openai-codex": OAuthProvider(
        "openai-codex",
        "ChatGPT Plus/Pro subscription (Codex)",
        openai_codex.login,
        openai_codex.refresh,
        api_key_login=False,
    ),
    "github-copilot": OAuthProvider(
        "github-copilot",
        "GitHub Copilot subscription",
        github_copilot.login,
        github_copilot.refresh,
        api_key_login=False,
        base_url=github_copilot.base_url,
        default_base_url=DEFAULT_COPILOT_BASE_URL,
        from_environment=github_copilot.exchange,
    ),
}
