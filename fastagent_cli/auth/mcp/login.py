"""``fastagent login mcp:<name>``: the authorization-code flow for one remote MCP server.

Discovery (:mod:`.discovery`), then a client (a stored registration for the same authorization
server whose loopback port is free again, a new dynamic registration, or the configured
``oauth.client_id``), then the browser: the user opens the printed URL, consents, and the
authorization server redirects to ``http://127.0.0.1:<port>/callback`` with the code and the
``state`` this login chose (anything else is turned away). The code is exchanged with the PKCE
verifier and the login stored under ``mcp:<name>`` in the credential file, under its lock.
Nothing is written before the exchange succeeds.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastagent_cli.auth.mcp import entry_key
from fastagent_cli.auth.mcp.client import authorization_url, configured_client, exchange_code, register
from fastagent_cli.auth.mcp.discovery import AuthServer, discover
from fastagent_cli.auth.oauth.callback_server import CallbackServer
from fastagent_cli.auth.oauth.common import LoginUI, pkce_pair, random_state
from fastagent_cli.auth.store import AuthStore
from fastagent_cli.errors import CredentialError
from fastagent_cli.tools.mcp_config import McpOAuthConfig, McpServerConfig, resolve_headers

__all__ = ["CALLBACK_PATH", "LOGIN_TIMEOUT_S", "login_mcp"]

CALLBACK_PATH = "/callback"
LOGIN_TIMEOUT_S = 300.0


def _port(redirect_uri: Any) -> int:
    try:
        return int(str(redirect_uri).rsplit(":", 1)[1].split("/", 1)[0])
    except (IndexError, ValueError):
        return 0


def _reusable(previous: Any, server: AuthServer, oauth: McpOAuthConfig) -> dict[str, Any] | None:
    """The client a previous login registered with this authorization server, if any."""
    if oauth.client_id is not None or not isinstance(previous, dict):
        return None
    client = previous.get("client")
    if isinstance(client, dict) and client.get("registered") and client.get("issuer") == server.issuer:
        return client
    return None


async def _listen(state: str, port: int, fallback: bool) -> CallbackServer:
    try:
        return await CallbackServer(CALLBACK_PATH, state, port=port, errors_end=True).start()
    except OSError as exc:
        if fallback:
            return await CallbackServer(CALLBACK_PATH, state, errors_end=True).start()
        raise CredentialError(
            f"cannot listen on 127.0.0.1:{port} for the login's redirect ({exc.strerror or exc})"
        ) from None


async def _client(
    name: str,
    server: AuthServer,
    oauth: McpOAuthConfig,
    reuse: dict[str, Any] | None,
    redirect: str,
    scopes: list[str],
) -> dict[str, Any]:
    if oauth.client_id is not None:
        secret = None
        if oauth.client_secret is not None:
            try:
                secret = resolve_headers({"client_secret": oauth.client_secret})["client_secret"]
            except ValueError as exc:
                why = str(exc).removeprefix("header ")
                raise CredentialError(
                    f"[mcp_servers.{name}] oauth.{why} (set it in the environment or .env)"
                ) from None
        return configured_client(server, oauth.client_id, secret, redirect)
    if reuse is not None and reuse.get("redirect_uri") == redirect:
        return reuse
    if server.registration_endpoint is None:
        raise CredentialError(
            f"authorization server {server.issuer} offers no dynamic client registration: register a client "
            f"with the redirect URI http://127.0.0.1:<port>{CALLBACK_PATH} there and set "
            f'[mcp_servers.{name}] oauth = {{ client_id = "...", redirect_port = <port> }}'
        )
    return await register(server, redirect, scopes)


async def login_mcp(
    name: str,
    config: McpServerConfig,
    store: AuthStore,
    ui: LoginUI,
    *,
    timeout_s: float = LOGIN_TIMEOUT_S,
    browser: bool = True,
) -> dict[str, Any]:
    """Run the login of server ``name`` and store it; the stored entry."""
    assert config.url is not None
    try:
        headers = resolve_headers(config.headers)
    except ValueError as exc:
        raise CredentialError(f"[mcp_servers.{name}] {exc}") from None
    ui.progress(f"finding the authorization server of {config.url} …")
    server = await discover(config.url, headers, config.transport)
    oauth = config.oauth or McpOAuthConfig()
    scopes = oauth.scopes if oauth.scopes is not None else server.scopes
    reuse = _reusable(store.read().get(entry_key(name)), server, oauth)
    state = random_state()
    verifier, challenge = pkce_pair()
    port = oauth.redirect_port or (_port(reuse["redirect_uri"]) if reuse else 0)
    callback = await _listen(state, port, fallback=not oauth.redirect_port)
    try:
        redirect = f"http://127.0.0.1:{callback.port}{CALLBACK_PATH}"
        client = await _client(name, server, oauth, reuse, redirect, scopes)
        url = authorization_url(server, client, scopes, state, challenge)
        ui.show(f"Open this URL in a browser to log in to MCP server {name}:\n\n  {url}\n")
        if browser:
            ui.open_browser(url)
        ui.progress(f"waiting for the browser to come back to {redirect} (up to {timeout_s:g} s) …")
        try:
            code = await asyncio.wait_for(callback.code(), timeout_s)
        except TimeoutError:
            raise CredentialError(
                f"no answer from the browser within {timeout_s:g} s; nothing was saved"
            ) from None
    finally:
        await callback.stop()
    ui.progress("exchanging the code for tokens …")
    tokens = await exchange_code(server, client, code, verifier)
    entry: dict[str, Any] = {
        "type": "oauth",
        "kind": "mcp",
        "url": config.url,
        "resource": server.resource,
        "issuer": server.issuer,
        "token_endpoint": server.token_endpoint,
        "client": client,
        **tokens,
    }

    def change(doc: dict[str, Any]) -> None:
        doc[entry_key(name)] = entry

    store.update(change)
    return entry
