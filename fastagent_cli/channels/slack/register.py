"""Registering the Slack Request URL (``register_webhook``, for ``dev --tunnel`` and ``deploy --run``):
wait for ``<public url>/health``, then point an onboarded app at ``<public url>/slack`` through
``apps.manifest.update`` with the owner-local App Configuration token. Without onboarding state the
URL is printed for the console instead. The outcome says which (``registered``, ``manual``,
``failed``) and the log names the URL to set by hand.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastagent_cli.channels.kit.health import HEALTH_INTERVAL_S, HEALTH_TIMEOUT_S, wait_for_health
from fastagent_cli.channels.slack.api import resolve_api_base
from fastagent_cli.channels.slack.config_token import (
    SlackConfigError,
    current_config_token,
    open_onboarding,
    update_manifest,
)
from fastagent_cli.channels.slack.manifest import build_manifest

__all__ = ["register_request_url"]

log = logging.getLogger("fastagent.channel")


async def register_request_url(public_url: str, state_root: Path | None, options: dict[str, Any]) -> str:
    """Point an onboarded app at ``<public_url>/slack`` (see the module doc)."""
    request_url = public_url.rstrip("/") + "/slack"
    onboarding = await open_onboarding(state_root) if state_root is not None else None
    try:
        state = onboarding.state if onboarding is not None else None
        if onboarding is None or state is None or not state.get("appId"):
            log.info(
                "[slack] set the app's Event Subscriptions Request URL to %s (no onboarding state here)",
                request_url,
            )
            return "manual"
        if not await wait_for_health(public_url.rstrip("/") + "/health", HEALTH_TIMEOUT_S, HEALTH_INTERVAL_S):
            log.error(
                "[slack] %s/health did not answer; set the Request URL by hand: %s", public_url, request_url
            )
            return "failed"
        api_base = resolve_api_base(options.get("api_base_url"))
        try:
            token = await current_config_token(onboarding, api_base)
            manifest = build_manifest(state["appName"], state["groupBehavior"], request_url=request_url)
            await update_manifest(api_base, state["appId"], manifest, token)
        except SlackConfigError as exc:
            hint = (
                " (run `fastagent add slack --replace-config`)"
                if exc.code in ("invalid_auth", "token_expired", "invalid_refresh_token")
                else ""
            )
            log.error(
                "[slack] apps.manifest.update failed: %s%s; set the Request URL by hand: %s",
                exc,
                hint,
                request_url,
            )
            return "failed"
        log.info("[slack] Request URL updated: %s", request_url)
        return "registered"
    finally:
        if onboarding is not None:
            await onboarding.aclose()
