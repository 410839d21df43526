"""Subscription logins (OAuth): Claude Pro/Max (``anthropic``), ChatGPT Plus/Pro
(``openai-codex``) and GitHub Copilot (``github-copilot``): the interactive flows ``login`` runs and
the renewal of expired logins every assembled agent does under the credential file's lock."""

from fastagent_cli.auth.oauth.common import LoginContext, LoginUI, TokenError
from fastagent_cli.auth.oauth.providers import OAUTH_PROVIDERS, OAuthProvider
from fastagent_cli.auth.oauth.resolver import OAuthCredentials

__all__ = ["OAUTH_PROVIDERS", "LoginContext", "LoginUI", "OAuthCredentials", "OAuthProvider", "TokenError"]
