"""The OAuth client side of an MCP login: registration, the authorization request and the token
endpoint's two grants.

A client is registered dynamically (RFC 7591, ``token_endpoint_auth_method = "none"``: a public
client) when the authorization server offers a ``registration_endpoint``, else it is the one
``[mcp_servers.<name>] oauth.client_id`` names. Every authorization and token request carries the
server's ``resource`` (RFC 8707); the authorization request carries a PKCE S256 challenge and a
random ``state``. The token endpoint's failures are :class:`~fastagent_cli.auth.oauth.common.TokenError`:
``permanent`` for a refused grant (a revoked or spent refresh token), so the user logs in again.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote, urlencode

from fastagent_cli.auth.mcp.discovery import AuthServer
from fastagent_cli.auth.oauth.common import TokenError, now_ms, request_json
from fastagent_cli.errors import CredentialError

__all__ = ["authorization_url", "exchange_code", "expiry", "refresh", "register"]

CLIENT_NAME = "fastagent"


def expiry(expires_in: Any) -> int | None:
    """Epoch ms at which to renew a token valid for ``expires_in`` seconds: a tenth of its life
    (at most a minute) early; ``None`` when the server gave no lifetime."""
    try:
        seconds = float(expires_in)
    except (TypeError, ValueError):
        return None
    lifetime_ms = int(seconds * 1000)
    return now_ms() + lifetime_ms - min(60_000, lifetime_ms // 10)


async def register(server: AuthServer, redirect_uri: str, scopes: list[str]) -> dict[str, Any]:
    """A new public client at the server's ``registration_endpoint`` (the client record to store)."""
    endpoint = server.registration_endpoint
    assert endpoint is not None
    body: dict[str, Any] = {
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    if scopes:
        body["scope"] = " ".join(scopes)
    try:
        answer = await request_json("client registration", "POST", endpoint, json_body=body)
    except TokenError as exc:
        raise CredentialError(exc.message) from None
    client_id = answer.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise CredentialError(f"client registration at {endpoint} answered no client_id")
    method = answer.get("token_endpoint_auth_method") or "none"
    secret = answer.get("client_secret")
    if method not in ("none", "client_secret_post", "client_secret_basic") or (
        method != "none" and not secret
    ):
        raise CredentialError(
            f"client registration at {endpoint} gave a client fastagent cannot use ({method})"
        )
    record = {"client_id": client_id, "token_endpoint_auth_method": method, "redirect_uri": redirect_uri}
    if isinstance(secret, str) and secret:
        record["client_secret"] = secret
    return {**record, "registered": True, "issuer": server.issuer}


def configured_client(
    server: AuthServer, client_id: str, secret: str | None, redirect_uri: str
) -> dict[str, Any]:
    """The client record of a client registered by hand."""
    record: dict[str, Any] = {"client_id": client_id, "redirect_uri": redirect_uri, "registered": False}
    record["issuer"] = server.issuer
    if secret:
        supported = server.metadata.get("token_endpoint_auth_methods_supported")
        basic = not isinstance(supported, list) or "client_secret_basic" in supported
        record["client_secret"] = secret
        record["token_endpoint_auth_method"] = "client_secret_basic" if basic else "client_secret_post"
    else:
        record["token_endpoint_auth_method"] = "none"
    return record


def authorization_url(
    server: AuthServer, client: dict[str, Any], scopes: list[str], state: str, challenge: str
) -> str:
    query = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": client["redirect_uri"],
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": server.resource,
    }
    if scopes:
        query["scope"] = " ".join(scopes)
    endpoint = server.authorization_endpoint
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"


def _client_auth(client: dict[str, Any], form: dict[str, str]) -> dict[str, str]:
    """Adds the client's credentials to ``form``; the headers to send."""
    secret, method = client.get("client_secret"), client.get("token_endpoint_auth_method")
    if secret and method == "client_secret_basic":
        pair = f"{quote(str(client['client_id']), safe='')}:{quote(str(secret), safe='')}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    form["client_id"] = str(client["client_id"])
    if secret and method == "client_secret_post":
        form["client_secret"] = str(secret)
    return {}


def _tokens(answer: dict[str, Any], what: str, previous_refresh: str | None = None) -> dict[str, Any]:
    access = answer.get("access_token")
    kind = str(answer.get("token_type", "bearer")).lower()
    if not isinstance(access, str) or not access or kind != "bearer":
        raise TokenError(f"{what} failed: the answer holds no bearer access token", permanent=False)
    fresh = answer.get("refresh_token")
    entry: dict[str, Any] = {
        "access": access,
        "refresh": fresh if isinstance(fresh, str) and fresh else previous_refresh,
        "expires": expiry(answer.get("expires_in")),
    }
    if isinstance(answer.get("scope"), str):
        entry["scope"] = answer["scope"]
    return entry


async def exchange_code(
    server: AuthServer, client: dict[str, Any], code: str, verifier: str
) -> dict[str, Any]:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": str(client["redirect_uri"]),
        "code_verifier": verifier,
        "resource": server.resource,
    }
    headers = _client_auth(client, form)
    what = "the code exchange"
    return _tokens(await request_json(what, "POST", server.token_endpoint, form=form, headers=headers), what)


async def refresh(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry with renewed tokens (the refresh token kept when the server sends no new one)."""
    client = entry.get("client")
    if not isinstance(client, dict) or not entry.get("refresh"):
        raise TokenError("the login has no refresh token", permanent=True)
    form = {
        "grant_type": "refresh_token",
        "refresh_token": str(entry["refresh"]),
        "resource": str(entry["resource"]),
    }
    headers = _client_auth(client, form)
    what = "the token refresh"
    answer = await request_json(what, "POST", str(entry["token_endpoint"]), form=form, headers=headers)
    return {**entry, **_tokens(answer, what, str(entry["refresh"]))}
