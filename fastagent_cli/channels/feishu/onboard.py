"""``fastagent add feishu|lark`` onboarding (features O16-O18; the Request URL registration is
:mod:`~fastagent_cli.channels.feishu.register`).

* **Scan-to-create** (Feishu): the OAuth 2.0 device authorization grant the platform offers for
  agent apps. ``POST <accounts>/oauth/v1/app/registration`` (form) ``action=begin`` returns a device
  code and a one-time confirmation link (about 10 minutes); the user opens it and confirms; polling
  (``action=poll``; ``authorization_pending``, ``slow_down``, ``access_denied``, ``expired_token``)
  returns the new app's id and secret, which are written to ``.env`` at once. A Lark-tenant user
  moves the polling to the Lark accounts domain. With ``--group-behavior context`` the
  ``im:message.group_msg`` and ``im:message:readonly`` scopes are added to the app draft through
  the application-v7 config API.
* **Verification Token capture** (webhook mode): the token has no read API; the platform sends it in
  the ``url_verification`` challenge it posts while an event-subscription PATCH is verified, so a
  throwaway responder behind a public URL receives it.
Base URLs: ``FEISHU_ACCOUNTS_BASE_URL`` / ``LARK_ACCOUNTS_BASE_URL`` and ``FEISHU_API_BASE_URL`` /
``LARK_API_BASE_URL``, for tests.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import httpx
from aiohttp import web

from fastagent_cli.channels.feishu.api import FeishuApi, FeishuApiError
from fastagent_cli.channels.feishu.cloud import Cloud
from fastagent_cli.errors import ConfigError

__all__ = [
    "CONTEXT_SCOPES",
    "capture_verification_token",
    "register_app",
    "request_scopes",
]

log = logging.getLogger("fastagent.channel")

CONTEXT_SCOPES = ("im:message.group_msg", "im:message:readonly")
_REGISTRATION = "/oauth/v1/app/registration"
_TIMEOUT_S = 30.0


def accounts_base(cloud: Cloud, kind: str | None = None) -> str:
    name = (kind or cloud.kind).upper()
    default = "https://accounts.larksuite.com" if name == "LARK" else "https://accounts.feishu.cn"
    return (os.environ.get(f"{name}_ACCOUNTS_BASE_URL") or default).rstrip("/")


async def _post_form(base: str, params: dict[str, str]) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=_TIMEOUT_S) as client:
        try:
            response = await client.post(base + _REGISTRATION, data=params)
        except httpx.HTTPError as exc:
            raise ConfigError(f"feishu app registration: {type(exc).__name__}: {exc}") from None
    try:
        data = response.json()
    except ValueError:
        raise ConfigError(f"feishu app registration failed: HTTP {response.status_code}, not JSON") from None
    pending = {"authorization_pending", "slow_down", "access_denied", "expired_token"}
    if response.status_code != 200 and not (isinstance(data, dict) and data.get("error") in pending):
        detail = data.get("error_description") or data.get("error") if isinstance(data, dict) else None
        raise ConfigError(f"feishu app registration failed: HTTP {response.status_code} — {detail}")
    return data if isinstance(data, dict) else {}


async def register_app(
    cloud: Cloud, name: str, say: Callable[[str], None], open_url: Callable[[str], None]
) -> tuple[str, str, str]:
    """Scan-to-create; ``(app id, app secret, tenant brand)``. Raises ConfigError on denial/expiry."""
    feishu = accounts_base(cloud, "feishu")
    begin = await _post_form(
        feishu,
        {
            "action": "begin",
            "archetype": "PersonalAgent",
            "auth_method": "client_secret",
            "request_user_info": "open_id",
        },
    )
    device, link = begin.get("device_code"), begin.get("verification_uri_complete")
    if not isinstance(device, str) or not isinstance(link, str):
        raise ConfigError(
            "feishu app registration: begin returned no device code "
            f"({begin.get('error') or 'unexpected answer'})"
        )
    parts = urlsplit(link)
    query = (
        parts.query
        + ("&" if parts.query else "")
        + urlencode({"from": "sdk", "tp": "sdk", "source": "fastagent", "name": name})
    )
    link = urlunsplit(parts._replace(query=query))
    expires = float(begin.get("expires_in") or 600)
    say(
        "Open this link in Feishu (or scan it as a QR code) and confirm; it is valid for about "
        f"{int(expires // 60)} minutes:\n  {link}"
    )
    open_url(link)
    interval = float(begin.get("interval") or 5)
    deadline = time.monotonic() + expires
    base = feishu
    while True:
        if time.monotonic() >= deadline:
            raise ConfigError(
                "the confirmation link expired before anyone confirmed; re-run `fastagent add feishu`"
            )
        poll = await _post_form(base, {"action": "poll", "device_code": device})
        info: dict[str, Any] = poll["user_info"] if isinstance(poll.get("user_info"), dict) else {}
        if info.get("tenant_brand") == "lark" and base == feishu:
            base = accounts_base(cloud, "lark")
            continue
        if isinstance(poll.get("client_id"), str) and isinstance(poll.get("client_secret"), str):
            return poll["client_id"], poll["client_secret"], str(info.get("tenant_brand") or "feishu")
        error = poll.get("error")
        if error == "slow_down":
            interval += 5
        elif error == "access_denied":
            raise ConfigError("the app creation was declined in Feishu")
        elif error == "expired_token":
            raise ConfigError("the confirmation link expired; re-run `fastagent add feishu` for a fresh one")
        elif error and error != "authorization_pending":
            raise ConfigError(
                f"feishu app registration failed: {error} {poll.get('error_description') or ''}".strip()
            )
        await asyncio.sleep(interval)


async def request_scopes(api: FeishuApi, scopes: tuple[str, ...]) -> None:
    """Add tenant scopes to the app draft (approval and publishing stay console steps)."""
    await api.patch_config(
        {"scope": {"add_scopes": [{"scope_name": s, "token_type": "tenant"} for s in scopes]}}
    )


async def capture_verification_token(
    api: FeishuApi,
    kind: str,
    public_url: Callable[[int], Awaitable[tuple[str, Callable[[], Awaitable[None]]] | None]],
    *,
    attempts: int = 8,
    retry_s: float = 10.0,
    timeout_s: float = 30.0,
) -> str:
    """The Verification Token, from the challenge of our own subscription PATCH (see the module doc)."""
    loop = asyncio.get_running_loop()
    token: asyncio.Future[str] = loop.create_future()

    async def challenge(request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({})
        if (
            isinstance(body, dict)
            and body.get("type") == "url_verification"
            and isinstance(body.get("token"), str)
        ):
            if not token.done():
                token.set_result(body["token"])
            return web.json_response({"challenge": body.get("challenge")})
        return web.json_response({})

    app = web.Application(client_max_size=64 * 1024)
    app.router.add_post("/{tail:.*}", challenge)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    exposed = None
    try:
        exposed = await public_url(port)
        if exposed is None:
            raise ConfigError("no public URL came up for the token capture (is cloudflared installed?)")
        for attempt in range(1, attempts + 1):
            try:
                await api.patch_config(
                    {"event": {"subscription_type": "webhook", "request_url": f"{exposed[0]}/{kind}"}}
                )
                break
            except FeishuApiError as exc:
                if exc.status == 404 or attempt == attempts:
                    raise
                await asyncio.sleep(retry_s)
        try:
            return await asyncio.wait_for(token, timeout_s)
        except TimeoutError:
            raise ConfigError("the platform's url_verification challenge never arrived") from None
    finally:
        if exposed is not None:
            await exposed[1]()
        await runner.cleanup()
