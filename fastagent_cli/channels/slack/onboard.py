"""``fastagent add slack`` onboarding and Request URL updates (features N17, N18).

A single-workspace internal app, created and installed from the terminal:

1. the user pastes an **App Configuration token** pair (access + refresh; Slack's "Your App
   Configuration Tokens"); it stays owner-local in ``onboarding`` (``<state root>/channels/slack/
   onboarding.json``, 0600) and never reaches ``.env`` or a deploy; an access token near expiry is
   rotated with ``tooling.tokens.rotate`` first;
2. a temporary responder on 127.0.0.1 (unguessable paths: one answers Slack's ``url_verification``,
   one takes the OAuth redirect) is exposed through a Quick Tunnel;
3. ``apps.manifest.create`` creates the app (:mod:`~fastagent_cli.channels.slack.manifest`). The
   attempt is recorded *before* the call: an ambiguous failure may have created an app, so a re-run
   refuses to create a second one blindly. A re-run with an app resumes it (``apps.manifest.update``
   points it at the new temporary URLs);
4. the Signing Secret goes to ``.env``; the user approves the OAuth v2 install; the code is
   exchanged (``oauth.v2.access``) and the rotating bot token, refresh token, expiry, client id and
   secret go to ``.env``.

``--replace-config`` swaps an expired or revoked configuration token pair without touching the app.
Pointing an onboarded app at a public URL later is :mod:`~fastagent_cli.channels.slack.register`.
Base URLs: ``SLACK_API_BASE_URL`` (Web API) and
``SLACK_OAUTH_BASE_URL`` (the authorize page), for tests and gateways.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

from fastagent_cli.channels.slack.api import resolve_api_base
from fastagent_cli.channels.slack.config_token import (
    API_TIMEOUT_S,
    CONFIG_TOKEN_LIFETIME_S,
    Onboarding,
    SlackConfigError,
    config_call,
    current_config_token,
    open_onboarding,
    update_manifest,
)
from fastagent_cli.channels.slack.manifest import bot_scopes, build_manifest
from fastagent_cli.channels.slack.setup_server import SetupServer
from fastagent_cli.errors import ConfigError, one_line
from fastagent_cli.state.channel_state import channel_home

__all__ = [
    "OAUTH_BASE_ENV",
    "Onboarding",
    "OnboardIO",
    "SetupServer",
    "onboard_slack",
    "open_onboarding",
    "replace_config_tokens",
]

log = logging.getLogger("fastagent.channel")

OAUTH_BASE_ENV = "SLACK_OAUTH_BASE_URL"
OAUTH_WAIT_S = 600.0
_AMBIGUOUS = {
    "fatal_error",
    "internal_error",
    "request_timeout",
    "service_unavailable",
    "failed_creating_app",
}


@dataclass(slots=True)
class OnboardIO:
    """What onboarding needs from the terminal."""

    say: Callable[[str], None]
    ask_secret: Callable[[str], str]
    write_env: Callable[[dict[str, str]], None]
    open_url: Callable[[str], None]
    public_url: Callable[[int], Awaitable[tuple[str, Callable[[], Awaitable[None]]] | None]]
    """Expose a local port: ``(public base URL, close)``, or ``None`` when no tunnel came up."""


async def replace_config_tokens(state_root: Path, io: OnboardIO) -> None:
    onboarding = await open_onboarding(state_root)
    try:
        state = onboarding.state
        if state is None:
            raise ConfigError(
                "--replace-config needs this machine's Slack onboarding state "
                f"({channel_home(state_root, 'slack') / 'onboarding.json'}); run `fastagent add slack` first"
            )
        token, refresh = _ask_config_tokens(io)
        state.update(configToken=token, configRefreshToken=refresh, configTokenExpiresAt=_config_expiry())
        await onboarding.save(state)
        io.say(
            "Replaced the Slack App Configuration tokens; the installed app and its runtime "
            "credentials are unchanged."
        )
    finally:
        await onboarding.aclose()


def _config_expiry() -> int:
    return int((time.time() + CONFIG_TOKEN_LIFETIME_S) * 1000)


def _ask_config_tokens(io: OnboardIO) -> tuple[str, str]:
    token = os.environ.get("SLACK_CONFIG_TOKEN") or io.ask_secret(
        "App Configuration access token (xoxe.xoxp-...)"
    )
    refresh = os.environ.get("SLACK_CONFIG_REFRESH_TOKEN") or io.ask_secret(
        "App Configuration refresh token (xoxe-...)"
    )
    if not token.strip() or not refresh.strip():
        raise ConfigError(
            "both App Configuration tokens are needed (https://api.slack.com/apps -> Your App "
            "Configuration Tokens)"
        )
    return token.strip(), refresh.strip()


async def onboard_slack(state_root: Path, app_name: str, group_behavior: str, io: OnboardIO) -> str:
    """Create (or resume) and install the app; returns what happened (``installed``, ``already``)."""
    api_base = resolve_api_base()
    onboarding = await open_onboarding(state_root)
    server = SetupServer()
    closer: Callable[[], Awaitable[None]] | None = None
    try:
        state = onboarding.state
        if state is not None and state.get("installedAt"):
            io.say(
                f"Slack app {state.get('appId')} is already installed in "
                f"{state.get('teamName') or state.get('teamId')}."
            )
            return "already"
        if state is None:
            io.say(
                "Open https://api.slack.com/apps -> Your App Configuration Tokens -> Generate "
                "Token, then paste both."
            )
            token, refresh = _ask_config_tokens(io)
            state = {
                "version": 1,
                "appName": app_name,
                "groupBehavior": group_behavior,
                "configToken": token,
                "configRefreshToken": refresh,
                "configTokenExpiresAt": _config_expiry(),
            }
            await onboarding.save(state)
        await server.start()
        exposed = await io.public_url(server.port)
        if exposed is None:
            raise ConfigError(
                "no public URL for the Slack setup (is cloudflared installed?); re-run "
                "`fastagent add slack` to "
                "resume, or `fastagent add slack --no-onboard` to set the app up by hand"
            )
        base, closer = exposed
        request_url, redirect_url = base + server.request_path, base + server.redirect_path
        token = await current_config_token(onboarding, api_base)
        state = onboarding.state or state
        manifest = build_manifest(
            state["appName"], state["groupBehavior"], request_url=request_url, redirect_url=redirect_url
        )
        if not state.get("appId"):
            if state.get("createAttemptedAt"):
                raise ConfigError(
                    f"a Slack app creation started at {state['createAttemptedAt']} returned no app id. Check "
                    "https://api.slack.com/apps: delete an incomplete app there, then remove "
                    f"{channel_home(state_root, 'slack') / 'onboarding.json'} and re-run"
                )
            io.say("Creating the internal Slack app from its manifest…")
            state["createAttemptedAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            await onboarding.save(state)
            try:
                created = await config_call(
                    api_base, "apps.manifest.create", {"manifest": json.dumps(manifest)}, token
                )
            except SlackConfigError as exc:
                if exc.status != 0 and exc.code not in _AMBIGUOUS:
                    state.pop("createAttemptedAt", None)
                    await onboarding.save(state)
                raise ConfigError(str(exc)) from None
            credentials = created.get("credentials") or {}
            if not created.get("app_id") or not all(
                credentials.get(k) for k in ("client_id", "client_secret", "signing_secret")
            ):
                raise ConfigError("Slack apps.manifest.create answered without the app's credentials")
            state.pop("createAttemptedAt", None)
            state.update(
                appId=created["app_id"],
                clientId=credentials["client_id"],
                clientSecret=credentials["client_secret"],
                signingSecret=credentials["signing_secret"],
            )
            await onboarding.save(state)  # the irreversible step is recorded before anything else
            io.say(f"Created Slack app {created['app_id']}.")
        else:
            if not state.get("clientId") or not state.get("clientSecret"):
                raise ConfigError(
                    f"Slack app {state['appId']} has no OAuth client credentials left here; set "
                    "SLACK_BOT_TOKEN and "
                    "SLACK_SIGNING_SECRET in .env by hand, or delete the app and the onboarding "
                    "state to start over"
                )
            io.say(f"Resuming Slack app {state['appId']}…")
            try:
                await update_manifest(api_base, state["appId"], manifest, token)
            except SlackConfigError as exc:
                raise ConfigError(str(exc)) from None
        if state.get("signingSecret"):
            io.write_env({"SLACK_SIGNING_SECRET": state["signingSecret"]})
            state.pop("signingSecret")
            await onboarding.save(state)
        oauth_state = secrets.token_hex(24)
        scopes = bot_scopes(state["groupBehavior"])
        authorize = (
            (os.environ.get(OAUTH_BASE_ENV) or "https://slack.com").rstrip("/")
            + "/oauth/v2/authorize?"
            + urlencode(
                {
                    "client_id": state["clientId"],
                    "scope": ",".join(scopes),
                    "redirect_uri": redirect_url,
                    "state": oauth_state,
                }
            )
        )
        io.say(f"Approve the installation in Slack: {authorize}")
        io.open_url(authorize)
        assert server.oauth is not None
        try:
            callback = await asyncio.wait_for(server.oauth, OAUTH_WAIT_S)
        except TimeoutError:
            raise ConfigError(
                "the Slack installation was not approved within 10 minutes; re-run `fastagent "
                "add slack` to resume"
            ) from None
        if callback.get("error"):
            raise ConfigError(
                "the Slack installation was not approved; re-run `fastagent add slack` to resume"
            )
        if callback.get("state") != oauth_state or not callback.get("code"):
            raise ConfigError(
                "the Slack OAuth redirect did not match this setup (state mismatch); re-run to resume"
            )
        installed = await _exchange(
            api_base, state["clientId"], state["clientSecret"], callback["code"], redirect_url
        )
        if installed["app_id"] != state["appId"]:
            raise ConfigError("Slack installed a different app than the one created; re-run to resume")
        granted = set(str(installed.get("scope") or "").split(","))
        if any(scope not in granted for scope in scopes):
            raise ConfigError(
                "the Slack installation lacks required scopes; re-run `fastagent add slack` to reinstall"
            )
        io.write_env(
            {
                "SLACK_BOT_TOKEN": installed["access_token"],
                "SLACK_BOT_REFRESH_TOKEN": installed["refresh_token"],
                "SLACK_BOT_TOKEN_EXPIRES_AT": str(
                    int(time.time() * 1000) + int(installed["expires_in"]) * 1000
                ),
                "SLACK_CLIENT_ID": state["clientId"],
                "SLACK_CLIENT_SECRET": state["clientSecret"],
            }
        )
        team = installed.get("team") or {}
        state.pop("clientSecret")
        state.update(
            teamId=team.get("id"),
            teamName=team.get("name"),
            installedAt=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        await onboarding.save(state)
        io.say(f"Installed Slack app {state['appId']} in {team.get('name') or team.get('id')}.")
        return "installed"
    finally:
        if closer is not None:
            await closer()
        await server.close()
        await onboarding.aclose()


async def _exchange(
    api_base: str, client_id: str, client_secret: str, code: str, redirect_url: str
) -> dict[str, Any]:
    basic = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode("ascii")
    async with httpx.AsyncClient(timeout=API_TIMEOUT_S) as client:
        try:
            response = await client.post(
                f"{api_base}/oauth.v2.access",
                data={"code": code, "redirect_uri": redirect_url},
                headers={"authorization": f"Basic {basic}"},
            )
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ConfigError(
                f"Slack oauth.v2.access failed: {one_line(str(exc), 200)}; re-run to resume"
            ) from None
    if not isinstance(data, dict) or data.get("ok") is not True:
        error = data.get("error") if isinstance(data, dict) else None
        raise ConfigError(
            f"Slack rejected the OAuth exchange ({error}); re-run `fastagent add slack` to resume"
        )
    if not all(
        isinstance(data.get(k), str) for k in ("access_token", "refresh_token", "app_id")
    ) or not isinstance(data.get("expires_in"), int):
        raise ConfigError(
            "Slack oauth.v2.access answered without rotating bot credentials (is token rotation on?)"
        )
    return data
