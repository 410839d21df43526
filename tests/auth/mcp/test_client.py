"""The client side of an MCP login without a network: the authorization request's parameters and
the client a configured ``oauth`` table makes."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from fastagent_cli.auth.mcp.client import authorization_url, configured_client
from fastagent_cli.auth.mcp.discovery import AuthServer
from fastagent_cli.auth.mcp.login import _client
from fastagent_cli.errors import CredentialError
from fastagent_cli.tools.mcp_config import McpOAuthConfig

REDIRECT = "http://127.0.0.1:8765/callback"


def server(**meta: object) -> AuthServer:
    base = {
        "authorization_endpoint": "https://as.example/authorize?tenant=t",
        "token_endpoint": "https://as/t",
    }
    return AuthServer("https://mcp.example/mcp", "https://as.example", {**base, **meta})


def test_the_authorization_request_carries_pkce_state_resource_and_scope() -> None:
    client = {"client_id": "c1", "redirect_uri": REDIRECT}
    url = authorization_url(server(), client, ["read", "write"], "st", "ch")
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert parts.path == "/authorize"
    assert query == {
        "tenant": "t",  # the endpoint's own query is kept
        "response_type": "code",
        "client_id": "c1",
        "redirect_uri": REDIRECT,
        "state": "st",
        "code_challenge": "ch",
        "code_challenge_method": "S256",
        "resource": "https://mcp.example/mcp",
        "scope": "read write",
    }


def test_a_configured_secret_uses_the_method_the_server_offers() -> None:
    basic = configured_client(server(), "c1", "s", REDIRECT)
    assert basic["token_endpoint_auth_method"] == "client_secret_basic"
    post = configured_client(
        server(token_endpoint_auth_methods_supported=["client_secret_post"]), "c1", "s", REDIRECT
    )
    assert post["token_endpoint_auth_method"] == "client_secret_post"
    public = configured_client(server(), "c1", None, REDIRECT)
    assert public["token_endpoint_auth_method"] == "none" and "client_secret" not in public


async def test_a_secret_from_an_unset_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_SECRET", raising=False)
    oauth = McpOAuthConfig(client_id="c1", client_secret="$NOPE_SECRET")
    with pytest.raises(CredentialError) as caught:
        await _client("linear", server(), oauth, None, REDIRECT, [])
    assert caught.value.message == (
        "[mcp_servers.linear] oauth.client_secret needs $NOPE_SECRET, which is not set "
        "(set it in the environment or .env)"
    )
    monkeypatch.setenv("NOPE_SECRET", "shh")
    assert (await _client("linear", server(), oauth, None, REDIRECT, []))["client_secret"] == "shh"


def test_a_secret_needs_a_client_id() -> None:
    with pytest.raises(ValueError, match="oauth.client_secret needs oauth.client_id"):
        McpOAuthConfig(client_secret="x")
