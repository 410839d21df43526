"""ChatGPT Plus/Pro (the Codex subscription): authorization code with PKCE and a local callback.

A one-shot server on ``127.0.0.1:1455`` (the redirect ``http://localhost:1455/auth/callback`` is
what the Codex client id allows) receives the browser's redirect. When the browser runs on another
machine the user pastes the redirect URL instead, whichever comes first. Tokens are form-posted to
``auth.openai.com``; the access token is a JWT whose ``chatgpt_account_id`` claim every request
must repeat, so it is kept with the login as ``accountId``.

``FASTAGENT_OPENAI_CODEX_OAUTH_URL`` replaces ``https://auth.openai.com`` and
``FASTAGENT_OPENAI_CODEX_CALLBACK_PORT`` the port (``0``: any free one) for tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any
from urllib.parse import urlencode

from fastagent_cli.auth.oauth.callback_server import CallbackServer
from fastagent_cli.auth.oauth.common import (
    LoginContext,
    LoginUI,
    TokenError,
    now_ms,
    origin,
    parse_pasted_code,
    pkce_pair,
    random_state,
    request_json,
)
from fastagent_cli.errors import CredentialError
from fastagent_cli.models.responses_request import CODEX_ORIGINATOR, codex_account_id

__all__ = ["authorize_url", "login", "refresh"]

CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
AUTH_ORIGIN = "https://auth.openai.com"
SCOPE = "openid profile email offline_access"
CALLBACK_PATH = "/auth/callback"
CALLBACK_PORT = 1455
ENV = "FASTAGENT_OPENAI_CODEX_OAUTH_URL"
PORT_ENV = "FASTAGENT_OPENAI_CODEX_CALLBACK_PORT"
LOGIN_TIMEOUT_S = 600.0


def _redirect_uri(port: int) -> str:
    return f"http://localhost:{port}{CALLBACK_PATH}"


def authorize_url(challenge: str, state: str, redirect_uri: str) -> str:
    query = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": redirect_uri,
        "scope": SCOPE,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
        "id_token_add_organizations": "true",
        "codex_cli_simplified_flow": "true",
        "originator": CODEX_ORIGINATOR,
    }
    return f"{origin(ENV, AUTH_ORIGIN)}/oauth/authorize?{urlencode(query)}"


def _entry(payload: dict[str, Any], what: str, previous_refresh: str = "") -> dict[str, Any]:
    access, refresh_token = payload.get("access_token"), payload.get("refresh_token") or previous_refresh
    if not isinstance(access, str) or not access or not isinstance(refresh_token, str) or not refresh_token:
        raise TokenError(f"{what} failed: the answer holds no access and refresh token", permanent=False)
    account = codex_account_id(access)
    if account is None:
        raise TokenError(f"{what} failed: the access token names no ChatGPT account", permanent=False)
    seconds = payload.get("expires_in")
    lifetime = int(float(seconds) * 1000) if isinstance(seconds, int | float) else 3_600_000
    return {"refresh": refresh_token, "access": access, "expires": now_ms() + lifetime, "accountId": account}


async def _token(what: str, form: dict[str, str], previous_refresh: str = "") -> dict[str, Any]:
    url = origin(ENV, AUTH_ORIGIN) + "/oauth/token"
    return _entry(await request_json(what, "POST", url, form=form), what, previous_refresh)


async def refresh(entry: dict[str, Any]) -> dict[str, Any]:
    old = str(entry["refresh"])
    form = {"grant_type": "refresh_token", "refresh_token": old, "client_id": CLIENT_ID}
    return {**entry, **await _token("ChatGPT token refresh", form, old)}


async def _pasted_code(ui: LoginUI, state: str) -> str:
    while True:
        code, pasted_state = parse_pasted_code(
            await ui.ask("Waiting for the browser … or paste the redirect URL here: ")
        )
        if code and (pasted_state is None or pasted_state == state):
            return code
        ui.progress("that is not this login's redirect URL (missing code or state mismatch); try again")


async def login(ui: LoginUI, context: LoginContext) -> dict[str, Any]:
    verifier, challenge = pkce_pair()
    state = random_state()
    port = int(os.environ.get(PORT_ENV) or CALLBACK_PORT)
    server: CallbackServer | None = None
    try:
        server = await CallbackServer(CALLBACK_PATH, state, port=port).start()
        redirect = _redirect_uri(server.port)
    except OSError as exc:
        ui.progress(
            f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}); paste the redirect URL instead"
        )
        redirect = _redirect_uri(port)
    try:
        url = authorize_url(challenge, state, redirect)
        ui.show(f"Open this URL in a browser and log in with your ChatGPT Plus/Pro account:\n\n  {url}\n")
        ui.open_browser(url)
        waiters = {asyncio.ensure_future(_pasted_code(ui, state))}
        if server is not None:
            waiters.add(asyncio.ensure_future(server.code()))
        try:
            done, _ = await asyncio.wait(
                waiters, timeout=LOGIN_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in waiters:
                waiter.cancel()
            for waiter in waiters:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await waiter  # the finished one's outcome is read below
        if not done:
            raise CredentialError(
                f"no login arrived within {LOGIN_TIMEOUT_S / 60:g} minutes; nothing was saved"
            )
        code = done.pop().result()
    finally:
        if server is not None:
            await server.stop()
    ui.progress("exchanging the code for tokens …")
    form = {
        "grant_type": "authorization_code",
        "client_id": CLIENT_ID,
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": redirect,
    }
    return await _token("ChatGPT code exchange", form)
