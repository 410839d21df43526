"""GitHub Copilot: the OAuth device flow, then Copilot's own short-lived API token.

1. ``POST https://github.com/login/device/code`` gives a user code; the user enters it at
   ``github.com/login/device`` (``Go to <uri> and enter the code:  <code>``).
2. ``POST .../login/oauth/access_token`` is polled (``authorization_pending``, ``slow_down``) until
   it answers with a GitHub token.
3. ``GET https://api.github.com/copilot_internal/v2/token`` exchanges that token for a Copilot API
   token (about 30 minutes; it names the API host in ``proxy-ep``). The GitHub token is kept as
   the login's ``refresh``: renewing is the same exchange again. A GitHub token from
   ``COPILOT_GITHUB_TOKEN`` / ``GH_TOKEN`` / ``GITHUB_TOKEN`` is exchanged the same way.

GitHub Enterprise: the login asks for the domain (blank for github.com) and keeps it as
``enterpriseUrl``. ``FASTAGENT_GITHUB_COPILOT_OAUTH_URL`` replaces both ``https://<domain>`` and
``https://api.<domain>`` (tests).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlsplit

from fastagent_cli.auth.oauth.common import LoginContext, LoginUI, TokenError, origin, request_json
from fastagent_cli.errors import CredentialError
from fastagent_cli.models.copilot import DEFAULT_COPILOT_BASE_URL, copilot_base_url

__all__ = ["base_url", "exchange", "login", "normalize_domain", "refresh"]

CLIENT_ID = "Iv1.b507a08c87ecfe98"
ENV = "FASTAGENT_GITHUB_COPILOT_OAUTH_URL"
USER_AGENT = "GitHubCopilotChat/0.35.0"
COPILOT_HEADERS = {
    "User-Agent": USER_AGENT,
    "Editor-Version": "vscode/1.107.0",
    "Editor-Plugin-Version": "copilot-chat/0.35.0",
    "Copilot-Integration-Id": "vscode-chat",
}
POLL_FACTOR, SLOW_DOWN_FACTOR = 1.2, 1.4
"""Poll a little slower than asked (clock drift in VMs makes GitHub answer ``slow_down``)."""
MIN_POLL_S = 1.0
EXPIRY_MARGIN_S = 5 * 60
ENABLE_TIMEOUT_S = 10.0


def normalize_domain(text: str) -> str | None:
    """``company.ghe.com`` from a domain or URL; ``None`` when it is not one."""
    value = text.strip()
    if not value:
        return None
    host = urlsplit(value if "://" in value else f"https://{value}").hostname
    return host or None


def _github(domain: str | None) -> str:
    return origin(ENV, f"https://{domain or 'github.com'}")


def _api(domain: str | None) -> str:
    return origin(ENV, f"https://api.{domain or 'github.com'}")


async def exchange(github_token: str, domain: str | None = None) -> dict[str, Any]:
    """The login entry for a GitHub token: a fresh Copilot token, the GitHub token as ``refresh``."""
    what = "Copilot token exchange"
    headers = {"Authorization": f"Bearer {github_token}", **COPILOT_HEADERS}
    payload = await request_json(what, "GET", _api(domain) + "/copilot_internal/v2/token", headers=headers)
    token, expires_at = payload.get("token"), payload.get("expires_at")
    if not isinstance(token, str) or not token or not isinstance(expires_at, int | float):
        raise TokenError(f"{what} failed: the answer holds no token and expiry", permanent=False)
    entry: dict[str, Any] = {
        "refresh": github_token,
        "access": token,
        "expires": int((expires_at - EXPIRY_MARGIN_S) * 1000),
    }
    if domain:
        entry["enterpriseUrl"] = domain
    return entry


async def refresh(entry: dict[str, Any]) -> dict[str, Any]:
    domain = entry.get("enterpriseUrl")
    return {**entry, **await exchange(str(entry["refresh"]), domain if isinstance(domain, str) else None)}


def base_url(entry: dict[str, Any]) -> str:
    domain = entry.get("enterpriseUrl")
    return copilot_base_url(str(entry.get("access") or ""), domain if isinstance(domain, str) else None)


async def _device_code(domain: str | None) -> dict[str, Any]:
    form = {"client_id": CLIENT_ID, "scope": "read:user"}
    headers = {"User-Agent": USER_AGENT}
    device = await request_json(
        "GitHub device code request",
        "POST",
        _github(domain) + "/login/device/code",
        form=form,
        headers=headers,
    )
    fields = ("device_code", "user_code", "verification_uri")
    if not all(isinstance(device.get(k), str) for k in fields):
        raise CredentialError("GitHub device code request failed: the answer lacks device_code/user_code")
    return device


async def _poll(domain: str | None, device: dict[str, Any]) -> str:
    url = _github(domain) + "/login/oauth/access_token"
    form = {
        "client_id": CLIENT_ID,
        "device_code": str(device["device_code"]),
        "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
    }
    deadline = time.monotonic() + float(device.get("expires_in") or 900)
    interval = max(MIN_POLL_S, float(device.get("interval") or 5))
    factor = POLL_FACTOR
    while time.monotonic() < deadline:
        await asyncio.sleep(min(interval * factor, max(0.0, deadline - time.monotonic())))
        answer = await request_json(
            "GitHub device login", "POST", url, form=form, headers={"User-Agent": USER_AGENT}
        )
        if isinstance(answer.get("access_token"), str) and answer["access_token"]:
            return str(answer["access_token"])
        error = answer.get("error")
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            given = answer.get("interval")
            wanted = float(given) if isinstance(given, int | float) and given > 0 else interval + 5
            interval, factor = max(MIN_POLL_S, wanted), SLOW_DOWN_FACTOR
            continue
        if error == "expired_token":
            break
        if error == "access_denied":
            raise CredentialError("the GitHub login was denied in the browser; nothing was saved")
        description = answer.get("error_description")
        raise CredentialError(
            f"GitHub device login failed: {error}{f': {description}' if description else ''}"
        )
    raise CredentialError("the GitHub device code expired before it was entered; run the login again")


async def _enable_models(base: str, token: str, models: tuple[str, ...]) -> int:
    """Accept each model's policy (Claude, Gemini and Grok models need it before first use)."""
    import httpx

    headers = {
        "Authorization": f"Bearer {token}",
        **COPILOT_HEADERS,
        "openai-intent": "chat-policy",
        "x-interaction-type": "chat-policy",
    }

    async def enable(client: httpx.AsyncClient, model: str) -> bool:
        try:
            response = await client.post(
                f"{base}/models/{model}/policy", json={"state": "enabled"}, headers=headers
            )
        except httpx.HTTPError:
            return False
        return response.is_success

    async with httpx.AsyncClient(timeout=ENABLE_TIMEOUT_S) as client:
        results = await asyncio.gather(*(enable(client, model) for model in models))
    return sum(results)


async def login(ui: LoginUI, context: LoginContext) -> dict[str, Any]:
    answer = await ui.ask("GitHub Enterprise URL or domain (Enter for github.com): ")
    domain = normalize_domain(answer)
    if answer.strip() and domain is None:
        raise CredentialError(f"{answer.strip()!r} is not a GitHub Enterprise URL or domain")
    device = await _device_code(domain)
    ui.show(f"Go to {device['verification_uri']} and enter the code:  {device['user_code']}")
    ui.open_browser(str(device["verification_uri"]))
    ui.progress("waiting for the code to be entered …")
    entry = await exchange(await _poll(domain, device), domain)
    if context.models:
        base = context.base_url if context.base_url not in ("", DEFAULT_COPILOT_BASE_URL) else base_url(entry)
        enabled = await _enable_models(base.rstrip("/"), str(entry["access"]), context.models)
        ui.progress(f"enabled {enabled} of {len(context.models)} Copilot models for this account")
    return entry
