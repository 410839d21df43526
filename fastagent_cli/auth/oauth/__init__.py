"""Subscription logins (OAuth): Claude Pro/Max (``anthropic``), ChatGPT Plus/Pro
(``openai-codex``) and GitHub Copilot (``github-copilot``): the interactive flows ``login`` runs and
the renewal of expired logins every assembled agent does under the credential file's lock."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastagent_cli.auth.oauth.common import LoginContext, LoginUI, TokenError
    from fastagent_cli.auth.oauth.providers import OAUTH_PROVIDERS, OAuthProvider
    from fastagent_cli.auth.oauth.resolver import OAuthCredentials

__all__ = ["OAUTH_PROVIDERS", "LoginContext", "LoginUI", "OAuthCredentials", "OAuthProvider", "TokenError"]

_HOMES = {
    "LoginContext": "common",
    "LoginUI": "common",
    "TokenError": "common",
    "OAUTH_PROVIDERS": "providers",
    "OAuthProvider": "providers",
    "OAuthCredentials": "resolver",
}


def __getattr__(name: str) -> Any:
    """Loaded when asked for: an agent's credentials import only the resolver, not every login
    flow (the flows load when a login is renewed or ``fastagent login`` runs)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)
