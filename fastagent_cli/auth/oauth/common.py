"""What the three subscription logins share: PKCE, the user interface they drive, token-endpoint
calls with their failures classified, pasted-code parsing and endpoint overrides for tests.

A token endpoint that refuses a grant (400/401/403: ``invalid_grant``, a revoked or already spent
refresh token) is a :class:`TokenError` with ``permanent`` set: the user has to log in again.
Anything else (5xx, 429, no connection) is transient: try again later, the login is still good.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from fastagent_cli.errors import CredentialError, one_line
from fastagent_cli.messages import now_ms

__all__ = [
    "EXPIRY_MARGIN_MS",
    "LoginContext",
    "LoginUI",
    "TokenError",
    "expires_in",
    "now_ms",
    "origin",
    "parse_pasted_code",
    "pkce_pair",
    "random_state",
    "request_json",
]

EXPIRY_MARGIN_MS = 5 * 60 * 1000
"""Renew this long before the server's expiry, so a token never dies in the middle of a turn."""
TOKEN_TIMEOUT_S = 30.0


class LoginUI(Protocol):
    """The terminal a login talks to."""

    def show(self, text: str) -> None:
        """Instructions the user acts on (a URL, a code)."""

    def progress(self, text: str) -> None:
        """A status line."""

    def open_browser(self, url: str) -> None:
        """Open ``url`` if a browser is at hand; never blocks, never fails."""

    async def ask(self, prompt: str) -> str:
        """One line from the user; cancelling the awaiting task withdraws the prompt."""


@dataclass(frozen=True, slots=True)
class LoginContext:
    """What a login may need to know about the agent: its provider's API base (after
    ``models.json``) and the provider's model ids."""

    base_url: str = ""
    models: tuple[str, ...] = ()


class TokenError(CredentialError):
    def __init__(self, message: str, *, permanent: bool, detail: str = "") -> None:
        super().__init__(message)
        self.permanent = permanent
        self.detail = detail or message


def expires_in(seconds: Any, margin_ms: int = EXPIRY_MARGIN_MS) -> int:
    """Epoch milliseconds at which a token valid for ``seconds`` should be renewed."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        value = 3600.0
    return now_ms() + int(value * 1000) - margin_ms


def origin(variable: str, default: str, env: Mapping[str, str] | None = None) -> str:
    """An endpoint origin, replaced by ``$variable`` when set (tests point it at 127.0.0.1)."""
    value = (os.environ if env is None else env).get(variable, "").strip()
    return (value or default).rstrip("/")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_pair() -> tuple[str, str]:
    """``(verifier, challenge)``: 32 random bytes base64url-encoded, and its S256 digest."""
    verifier = _b64url(secrets.token_bytes(32))
    return verifier, _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def random_state() -> str:
    return secrets.token_hex(16)


def parse_pasted_code(text: str) -> tuple[str | None, str | None]:
    """``(code, state)`` from what a user pastes: a redirect URL, ``code#state``, a query string
    (``code=...&state=...``) or the bare code."""
    value = text.strip()
    if not value:
        return None, None
    parts = urlsplit(value)
    if parts.scheme and parts.netloc:
        return _code_and_state(parts.query)
    if "#" in value:
        code, _, state = value.partition("#")
        return code or None, state or None
    if "code=" in value:
        return _code_and_state(value.lstrip("?"))
    return value, None


def _code_and_state(query: str) -> tuple[str | None, str | None]:
    fields = parse_qs(query)
    code, state = fields.get("code"), fields.get("state")
    return (code[0] if code else None), (state[0] if state else None)


def _error_text(body: bytes) -> str:
    try:
        payload = json.loads(body)
    except ValueError:
        return one_line(body.decode("utf-8", "replace"))[:300]
    if not isinstance(payload, dict):
        return one_line(str(payload))[:300]
    error = payload.get("error")
    if isinstance(error, dict):  # {"error": {"type": ..., "message": ...}}
        kind, message = error.get("type") or error.get("code"), error.get("message")
        return one_line(": ".join(str(p) for p in (kind, message) if p))
    description = payload.get("error_description") or payload.get("message")
    return one_line(": ".join(str(p) for p in (error, description) if p)) or one_line(json.dumps(payload))


async def request_json(
    what: str,
    method: str,
    url: str,
    *,
    form: Mapping[str, str] | None = None,
    json_body: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One call to an authorization server; the JSON object it answered. ``what`` names the call in
    errors (``"Anthropic token refresh"``)."""
    import httpx

    sent = {"Accept": "application/json", **dict(headers or {})}
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(TOKEN_TIMEOUT_S, connect=10.0)) as client:
            response = await client.request(method, url, data=form, json=json_body, headers=sent)
    except httpx.HTTPError as exc:
        detail = one_line(str(exc)) or type(exc).__name__
        raise TokenError(
            f"{what} failed: cannot reach {url}: {detail}", permanent=False, detail=detail
        ) from None
    if not response.is_success:
        detail = f"{response.status_code} {_error_text(response.content)}".strip()
        permanent = response.status_code in (400, 401, 403)
        raise TokenError(f"{what} failed: {detail}", permanent=permanent, detail=detail)
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        text = one_line(response.text)[:200]
        raise TokenError(f"{what} failed: the answer is not a JSON object: {text}", permanent=False)
    return payload
