"""``Authorization: Bearer`` for a remote MCP server logged in with ``fastagent login mcp:<name>``.

Every request carries the current access token (renewed first when it is about to expire). A 401
with a ``Bearer`` challenge renews the token once and repeats the request; a second 401, or a
renewal that fails, leaves the 401 to the SDK (which turns it into an error for that request) and
records why in :attr:`BearerAuth.problem`, so the connection reports "run 'fastagent login
mcp:<name>'" instead of the SDK's "Server returned an error response". A ``403`` with
``error="insufficient_scope"`` (a step-up) is recorded the same way: more scopes take a new
login. Nothing here raises into the SDK's transport (an exception there would take the whole
session down) and nothing opens a browser: the login itself happens in a terminal.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import httpx2

from fastagent_cli.tools.mcp_auth import LoginRequired, McpAuthError, McpTokens, parse_challenge

__all__ = ["BearerAuth"]


def _bearer_challenge(response: httpx2.Response) -> bool:
    challenge = parse_challenge(response.headers.get("www-authenticate", ""))
    return response.status_code == 401 and challenge is not None


def _insufficient_scope(response: httpx2.Response) -> str | None:
    """What a ``403`` step-up challenge (``error="insufficient_scope"``) asks for, else ``None``."""
    challenge = (
        parse_challenge(response.headers.get("www-authenticate", "")) if response.status_code == 403 else None
    )
    if challenge is None or challenge.get("error") != "insufficient_scope":
        return None
    return challenge.get("scope") or challenge.get("error_description") or "insufficient_scope"


class BearerAuth(httpx2.Auth):
    def __init__(self, server: str, tokens: McpTokens) -> None:
        self.server = server
        self.tokens = tokens
        self.problem: McpAuthError | None = None
        """Why the last refused request could not be authorized (``None`` after a success)."""

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token: str | None = None
        failed: McpAuthError | None = None
        try:
            token = await self.tokens.access()
        except McpAuthError as exc:
            failed = exc
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        wanted = _insufficient_scope(response)
        if wanted is not None:  # a step-up: only a new login can grant more
            self.problem = LoginRequired(self.server, f"needs a login with more scopes ({wanted})")
            return
        if not _bearer_challenge(response):
            if response.is_success:
                self.problem = None
            return
        if token is None:
            self.problem = failed or LoginRequired(self.server, "needs a login")
            return
        try:
            token = await self.tokens.renew(token)
        except McpAuthError as exc:
            self.problem = exc
            return
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if _bearer_challenge(response):
            self.problem = LoginRequired(self.server, "refused the renewed token")
        elif response.is_success:
            self.problem = None
