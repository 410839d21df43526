"""Subscription logins (OAuth): Claude Pro/Max (``anthropic``), ChatGPT Plus/Pro
(``openai-codex``) and GitHub Copilot (``github-copilot``): the interactive flows ``login`` runs and
the renewal of expired logins every assembled agent does under the credential file's lock."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastagent_cli.auth.oauth.common import LoginContext, LoginUI, TokenError
from fastagent_cli.auth.oauth.resolver import OAuthCredentials

if TYPE_CHECKING:
    from fastagent_cli.auth.oauth.providers import OAUTH_PROVIDERS, OAuthProvider

__all__ = ["OAUTH_PROVIDERS", "LoginContext", "LoginUI", "OAuthCredentials", "OAuthProvider", "TokenError"]


def __getattr__(name: str) -> Any:
    # Every agent's credentials go through the resolver; only a login renewal or `fastagent
    # login` needs the providers' flows (about 8 ms of imports on every start and invoke).
    if name in ("OAUTH_PROVIDERS", "OAuthProvider"):
        from fastagent_cli.auth.oauth import providers

        return getattr(providers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
