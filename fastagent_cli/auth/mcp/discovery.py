"""Finding a remote MCP server's authorization server.

1. An MCP request without a token: a server behind OAuth answers ``401`` with
   ``WWW-Authenticate: Bearer resource_metadata="..."`` (and maybe ``scope="..."``); any other
   answer means it needs no login.
2. The protected-resource metadata (RFC 9728): the challenge's URL, else
   ``/.well-known/oauth-protected-resource/<path>`` and then ``/.well-known/oauth-protected-resource``
   on the server's origin. It names ``authorization_servers`` (the first is used) and the
   ``resource``, which must be the server's URL or a parent of it. A server that publishes none
   (the 2025-03-26 revision) has its authorization server at its own origin.
3. The authorization server's metadata: for an issuer with a path ``/p``,
   ``/.well-known/oauth-authorization-server/p``, ``/.well-known/openid-configuration/p`` and
   ``/p/.well-known/openid-configuration``; without one, the first two without ``/p``. Its
   ``issuer`` must be the one asked for, its endpoints HTTPS (plain HTTP only on loopback), and
   it must offer PKCE ``S256``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from fastagent_cli.errors import CredentialError, one_line
from fastagent_cli.tools.mcp_auth import parse_challenge

if TYPE_CHECKING:
    import httpx

__all__ = ["AuthServer", "NoLoginNeeded", "canonical_resource", "discover", "parse_challenge"]

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "fastagent-login", "version": "0"},
    },
}


class NoLoginNeeded(CredentialError):
    """The server answered without asking for a token."""


@dataclass(frozen=True, slots=True)
class AuthServer:
    """What discovery found: the server's resource identifier and its authorization server."""

    resource: str
    issuer: str
    metadata: dict[str, Any]
    scopes: list[str] = field(default_factory=list)
    """What the challenge or the resource metadata says to ask for."""

    @property
    def authorization_endpoint(self) -> str:
        return str(self.metadata["authorization_endpoint"])

    @property
    def token_endpoint(self) -> str:
        return str(self.metadata["token_endpoint"])

    @property
    def registration_endpoint(self) -> str | None:
        value = self.metadata.get("registration_endpoint")
        return value if isinstance(value, str) and value else None


def canonical_resource(url: str) -> str:
    """The server's URL as an RFC 8707 resource: lower-case scheme and host, no fragment."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, ""))


def _secure(url: str) -> bool:
    """HTTPS, or plain HTTP to this machine (OAuth 2.1 allows loopback only)."""
    parts = urlsplit(url)
    return parts.scheme == "https" or (
        parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")
    )


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _path(url: str) -> str:
    return urlsplit(url).path.rstrip("/")


def _within(resource: str, url: str) -> bool:
    """``resource`` names ``url`` or a parent of it (same origin, a path prefix on a ``/``)."""
    res, target = canonical_resource(resource).rstrip("/"), canonical_resource(url)
    return target == res or target.startswith(res + "/")


async def _get_json(client: httpx.AsyncClient, url: str) -> dict[str, Any] | None:
    import httpx

    try:
        response = await client.get(url, headers={"Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise CredentialError(f"cannot reach {url}: {one_line(str(exc)) or type(exc).__name__}") from None
    if not response.is_success:
        return None
    try:
        payload = response.json()
    except (ValueError, json.JSONDecodeError):
        return None
    return payload if isinstance(payload, dict) else None


async def _challenge(
    client: httpx.AsyncClient, url: str, headers: Mapping[str, str], transport: str
) -> dict[str, str]:
    import httpx

    sent = {"Accept": "application/json, text/event-stream", **headers}
    try:
        if transport == "sse":
            request = client.build_request("GET", url, headers={**sent, "Accept": "text/event-stream"})
        else:
            request = client.build_request("POST", url, json=_INITIALIZE, headers=sent)
        response = await client.send(request, stream=True)
        await response.aclose()
    except httpx.HTTPError as exc:
        raise CredentialError(f"cannot reach {url}: {one_line(str(exc)) or type(exc).__name__}") from None
    if response.status_code != 401:
        raise NoLoginNeeded(
            f"{url} needs no login: it answered {response.status_code} to a request without a token"
        )
    challenge = parse_challenge(response.headers.get("www-authenticate", ""))
    if challenge is None:
        raise CredentialError(f"{url} answered 401 without a Bearer challenge: it does not log in with OAuth")
    return challenge


def _metadata_urls(issuer: str) -> list[str]:
    origin, path = _origin(issuer), _path(issuer)
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


async def discover(url: str, headers: Mapping[str, str], transport: str = "streamable-http") -> AuthServer:
    """Steps 1 to 3 of the module doc for the server at ``url``; CredentialError saying which
    step failed (:class:`NoLoginNeeded` when the server asks for no token)."""
    import httpx

    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=10.0), follow_redirects=True) as client:
        challenge = await _challenge(client, url, headers, transport)
        named = challenge.get("resource_metadata")
        candidates = [named] if named else []
        if _path(url):
            candidates.append(f"{_origin(url)}/.well-known/oauth-protected-resource{_path(url)}")
        candidates.append(f"{_origin(url)}/.well-known/oauth-protected-resource")
        resource_meta: dict[str, Any] | None = None
        for candidate in dict.fromkeys(candidates):
            resource_meta = await _get_json(client, candidate)
            if resource_meta is not None:
                break
        resource, scopes = canonical_resource(url), challenge.get("scope", "").split()
        if resource_meta is not None:
            servers = resource_meta.get("authorization_servers")
            if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
                raise CredentialError(
                    f"the protected-resource metadata of {url} names no authorization_servers"
                )
            issuer = servers[0]
            named_resource = resource_meta.get("resource")
            if isinstance(named_resource, str) and named_resource:
                if not _within(named_resource, url):
                    raise CredentialError(
                        f"the protected-resource metadata of {url} is for another resource ({named_resource})"
                    )
                resource = named_resource
            supported = resource_meta.get("scopes_supported")
            if not scopes and isinstance(supported, list):
                scopes = [str(s) for s in supported]
        else:
            issuer = _origin(url)  # the 2025-03-26 revision: the server's origin is its own issuer
        for candidate in _metadata_urls(issuer):
            meta = await _get_json(client, candidate)
            if meta is not None and meta.get("authorization_endpoint") and meta.get("token_endpoint"):
                break
        else:
            raise CredentialError(f"no authorization server metadata found for {issuer}")
    if str(meta.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
        raise CredentialError(
            f"the metadata of authorization server {issuer} names another issuer ({meta.get('issuer')})"
        )
    for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        endpoint = meta.get(key)
        if isinstance(endpoint, str) and endpoint and not _secure(endpoint):
            raise CredentialError(
                f"authorization server {issuer} has a plain-http {key} ({endpoint}): "
                "refusing to send credentials there"
            )
    methods = meta.get("code_challenge_methods_supported")
    if not isinstance(methods, list) or "S256" not in methods:
        raise CredentialError(
            f"authorization server {issuer} does not offer PKCE S256; fastagent cannot log in to it"
        )
    return AuthServer(resource=resource, issuer=issuer, metadata=meta, scopes=scopes)
