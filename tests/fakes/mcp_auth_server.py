"""The tests' own OAuth authorization server for MCP logins, on 127.0.0.1 in a background thread
(so ``fastagent`` subprocesses, the MCP server process and sync tests can all use it).

* ``GET /.well-known/oauth-authorization-server``: RFC 8414 metadata (``registration_endpoint``
  only while :attr:`registration` is on; PKCE ``S256``);
* ``POST /register``: RFC 7591 dynamic registration of a public client;
* ``GET /authorize``: consents at once and redirects to the registered ``redirect_uri`` with
  ``code`` and ``state`` (``error=access_denied`` while :attr:`deny` is set); it insists on
  ``code_challenge_method=S256`` and a ``resource``;
* ``POST /token``: ``authorization_code`` (the PKCE verifier checked against the challenge, the
  redirect URI and client matched) and ``refresh_token`` (single use: a spent or revoked one is
  ``400 invalid_grant``); access tokens live :attr:`access_lifetime_s` seconds and are bound to
  the ``resource`` asked for;
* ``POST /introspect``: RFC 7662, what the MCP server asks to check a bearer token.

Every token-endpoint grant is recorded in :attr:`grants`; :attr:`refresh_delay` holds refresh
answers back, so concurrent refreshes really overlap.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from .threaded_app import ThreadedApp

__all__ = ["McpAuthServer"]


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@dataclass
class _Access:
    client_id: str
    resource: str
    scope: str
    expires: float


class McpAuthServer(ThreadedApp):
    def __init__(self, *, access_lifetime_s: int = 3600, scopes: tuple[str, ...] = ("mcp:tools",)) -> None:
        super().__init__("mcp-auth-server")
        self.access_lifetime_s = access_lifetime_s
        self.scopes = scopes
        self.registration = True
        self.deny = False
        self.refresh_delay = 0.0
        self.grants: list[str] = []
        """``grant_type`` of every token request that succeeded, in order."""
        self.refused: list[str] = []
        """``error`` of every token request that failed."""
        self.authorize_queries: list[dict[str, str]] = []
        self.clients: dict[str, dict[str, Any]] = {}
        self.access: dict[str, _Access] = {}
        self.refresh: dict[str, tuple[str, str, str]] = {}
        """refresh token -> (client_id, resource, scope)"""
        self._codes: dict[str, dict[str, str]] = {}
        self._counter = itertools.count(1)

    # -- scripting
    def expire_access(self) -> None:
        """Every access token issued so far stops working (as if its lifetime ran out)."""
        for token in self.access.values():
            token.expires = 0.0

    def revoke_refresh(self) -> None:
        """Every refresh token issued so far is revoked."""
        self.refresh.clear()

    # -- the app
    def make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/oauth-authorization-server", self._metadata)
        app.router.add_post("/register", self._register)
        app.router.add_get("/authorize", self._authorize)
        app.router.add_post("/token", self._token)
        app.router.add_post("/introspect", self._introspect)
        return app

    async def _metadata(self, request: web.Request) -> web.Response:
        meta: dict[str, Any] = {
            "issuer": self.origin,
            "authorization_endpoint": f"{self.origin}/authorize",
            "token_endpoint": f"{self.origin}/token",
            "introspection_endpoint": f"{self.origin}/introspect",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
            "scopes_supported": list(self.scopes),
        }
        if self.registration:
            meta["registration_endpoint"] = f"{self.origin}/register"
        return web.json_response(meta)

    async def _register(self, request: web.Request) -> web.Response:
        body = await request.json()
        uris = body.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            return web.json_response({"error": "invalid_redirect_uri"}, status=400)
        client_id = f"client-{next(self._counter)}"
        record = {**body, "client_id": client_id, "client_id_issued_at": int(time.time())}
        self.clients[client_id] = record
        return web.json_response(record, status=201)

    def add_client(self, client_id: str, redirect_uri: str, secret: str | None = None) -> None:
        """A client registered by hand."""
        self.clients[client_id] = {
            "client_id": client_id,
            "redirect_uris": [redirect_uri],
            "client_secret": secret,
        }

    async def _authorize(self, request: web.Request) -> web.Response:
        q = dict(request.query)
        self.authorize_queries.append(q)
        client = self.clients.get(q.get("client_id", ""))
        if client is None or q.get("redirect_uri") not in client["redirect_uris"]:
            return web.Response(status=400, text="unknown client or redirect_uri")
        if (
            q.get("response_type") != "code"
            or q.get("code_challenge_method") != "S256"
            or not q.get("resource")
        ):
            return web.Response(status=400, text="bad authorization request")
        if self.deny:
            answer = {"error": "access_denied", "error_description": "the user said no", "state": q["state"]}
        else:
            code = f"code-{next(self._counter)}"
            self._codes[code] = q
            answer = {"code": code, "state": q["state"]}
        raise web.HTTPFound(f"{q['redirect_uri']}?{urlencode(answer)}")

    def _fail(self, error: str, status: int = 400) -> web.Response:
        self.refused.append(error)
        return web.json_response({"error": error}, status=status)

    def _client(self, form: Any) -> str | None:
        client_id = form.get("client_id", "")
        client = self.clients.get(client_id)
        if client is None:
            return None
        secret = client.get("client_secret")
        if secret and form.get("client_secret") != secret:
            return None
        return str(client_id)

    def _issue(self, client_id: str, resource: str, scope: str) -> dict[str, Any]:
        access, refresh = f"at-{next(self._counter)}", f"rt-{next(self._counter)}"
        self.access[access] = _Access(client_id, resource, scope, time.time() + self.access_lifetime_s)
        self.refresh[refresh] = (client_id, resource, scope)
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.access_lifetime_s,
            "refresh_token": refresh,
            "scope": scope,
        }

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        client_id = self._client(form)
        if client_id is None:
            return self._fail("invalid_client", 401)
        grant = form.get("grant_type")
        if grant == "authorization_code":
            asked = self._codes.pop(str(form.get("code", "")), None)
            if asked is None or asked["client_id"] != client_id:
                return self._fail("invalid_grant")
            if form.get("redirect_uri") != asked["redirect_uri"]:
                return self._fail("invalid_grant")
            if _s256(str(form.get("code_verifier", ""))) != asked["code_challenge"]:
                return self._fail("invalid_grant")
            if form.get("resource") != asked["resource"]:
                return self._fail("invalid_target")
            scope = asked.get("scope") or " ".join(self.scopes)
            self.grants.append("authorization_code")
            return web.json_response(self._issue(client_id, asked["resource"], scope))
        if grant == "refresh_token":
            await asyncio.sleep(self.refresh_delay)
            held = self.refresh.pop(str(form.get("refresh_token", "")), None)
            if held is None or held[0] != client_id:
                return self._fail("invalid_grant")
            self.grants.append("refresh_token")
            return web.json_response(self._issue(*held))
        return self._fail("unsupported_grant_type")

    async def _introspect(self, request: web.Request) -> web.Response:
        form = await request.post()
        token = self.access.get(str(form.get("token", "")))
        if token is None or token.expires < time.time():
            return web.json_response({"active": False})
        return web.json_response(
            {
                "active": True,
                "client_id": token.client_id,
                "scope": token.scope,
                "exp": int(token.expires),
                "aud": token.resource,
            }
        )
