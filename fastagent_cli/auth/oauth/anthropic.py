"""Claude Pro/Max: authorization code with PKCE and a pasted-back code.

The user opens ``claude.ai/oauth/authorize`` (``code=true`` asks Anthropic to show the code
rather than redirect to a local server, so this also works over SSH), logs in, and pastes back
what the page shows, ``<code>#<state>``; the code is exchanged at the token endpoint with the PKCE
verifier (which doubles as the state, as Claude Code does). Tokens are ``sk-ant-oat...`` access
tokens (used as Bearer, see :mod:`fastagent_cli.models.claude_code`) and single-use refresh
tokens, both JSON-posted. ``FASTAGENT_ANTHROPIC_OAUTH_URL`` replaces both hosts (tests).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastagent_cli.auth.oauth.common import (
    LoginContext,
    LoginUI,
    TokenError,
    expires_in,
    origin,
    parse_pasted_code,
    pkce_pair,
    request_json,
)
from fastagent_cli.errors import CredentialError

__all__ = ["authorize_url", "exchange_code", "login", "refresh"]

CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
AUTHORIZE_ORIGIN = "https://claude.ai"
TOKEN_ORIGIN = "https://platform.claude.com"
REDIRECT_URI = "https://platform.claude.com/oauth/code/callback"
SCOPES = " ".join(
    (
        "org:create_api_key",
        "user:profile",
        "user:inference",
        "user:sessions:claude_code",
        "user:mcp_servers",
        "user:file_upload",
    )
)
ENV = "FASTAGENT_ANTHROPIC_OAUTH_URL"
MAX_PASTES = 3


def _token_url() -> str:
    return origin(ENV, TOKEN_ORIGIN) + "/v1/oauth/token"


def authorize_url(challenge: str, state: str) -> str:
    query = {
        "code": "true",
        "client_id": CLIENT_ID,
        "response_type": "code",
        "redirect_uri": REDIRECT_URI,
        "scope": SCOPES,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
    }
    return f"{origin(ENV, AUTHORIZE_ORIGIN)}/oauth/authorize?{urlencode(query)}"


def _entry(payload: dict[str, Any], what: str, previous_refresh: str = "") -> dict[str, Any]:
    access, refresh_token = payload.get("access_token"), payload.get("refresh_token") or previous_refresh
    if not isinstance(access, str) or not access or not isinstance(refresh_token, str) or not refresh_token:
        raise TokenError(f"{what} failed: the answer holds no access and refresh token", permanent=False)
    return {"refresh": refresh_token, "access": access, "expires": expires_in(payload.get("expires_in"))}


async def exchange_code(code: str, state: str, verifier: str) -> dict[str, Any]:
    body = {
        "grant_type": "authorization_code",
        "client_id": CLIENT_ID,
        "code": code,
        "state": state,
        "redirect_uri": REDIRECT_URI,
        "code_verifier": verifier,
    }
    what = "Anthropic code exchange"
    return _entry(await request_json(what, "POST", _token_url(), json_body=body), what)


async def refresh(entry: dict[str, Any]) -> dict[str, Any]:
    body = {"grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": str(entry["refresh"])}
    what = "Anthropic token refresh"
    fresh = _entry(
        await request_json(what, "POST", _token_url(), json_body=body), what, str(entry["refresh"])
    )
    return {**entry, **fresh}


async def login(ui: LoginUI, context: LoginContext) -> dict[str, Any]:
    verifier, challenge = pkce_pair()
    url = authorize_url(challenge, verifier)
    ui.show(f"Open this URL in a browser and log in with your Claude Pro/Max account:\n\n  {url}\n")
    ui.open_browser(url)
    for _ in range(MAX_PASTES):
        code, state = parse_pasted_code(await ui.ask("Paste the code shown after login (code#state): "))
        if not code:
            ui.progress("no code entered")
            continue
        if state and state != verifier:
            ui.progress("that code belongs to another login attempt (state mismatch); paste the latest one")
            continue
        ui.progress("exchanging the code for tokens …")
        return await exchange_code(code, state or verifier, verifier)
    raise CredentialError(f"no usable code after {MAX_PASTES} tries; nothing was saved")
