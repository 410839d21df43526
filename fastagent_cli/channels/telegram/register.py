"""Registering the Telegram webhook (features M16, S3): ``setWebhook`` once the public URL serves.

``dev --tunnel``, ``start --tunnel`` and ``deploy --run`` call it with the public base URL. Telegram
checks the URL when the webhook is set, and a fresh tunnel or deploy needs a few seconds before it
routes, so ``<base>/health`` is polled first (every :data:`HEALTH_INTERVAL_S`, up to
:data:`HEALTH_TIMEOUT_S`). The outcome is a fact for the caller: ``registered``, ``manual`` (no
tokens yet: the URL to register is printed) or ``failed`` (the command to do it by hand is printed,
without the secrets).
"""

from __future__ import annotations

import logging

from fastagent_cli.channels.kit.health import HEALTH_INTERVAL_S, HEALTH_TIMEOUT_S, wait_for_health
from fastagent_cli.channels.telegram.api import BotApi, TelegramApiError

__all__ = ["HEALTH_INTERVAL_S", "HEALTH_TIMEOUT_S", "register_telegram_webhook", "wait_for_health"]

log = logging.getLogger("fastagent.channel")


def _manual(webhook: str) -> str:
    return (
        f'curl "https://api.telegram.org/bot$TELEGRAM_BOT_TOKEN/setWebhook" -d url={webhook} '
        "-d secret_token=$TELEGRAM_SECRET_TOKEN"
    )


async def register_telegram_webhook(
    public_url: str,
    *,
    bot_token: str,
    secret_token: str,
    api_base_url: str | None = None,
    health_timeout_s: float = HEALTH_TIMEOUT_S,
    health_interval_s: float = HEALTH_INTERVAL_S,
) -> str:
    base = public_url.rstrip("/")
    webhook = f"{base}/telegram"
    if not bot_token or not secret_token:
        log.info(
            "[telegram] set TELEGRAM_BOT_TOKEN and TELEGRAM_SECRET_TOKEN in .env, then run again to register "
            "the webhook; its URL is %s",
            webhook,
        )
        return "manual"
    log.info("[telegram] waiting for %s/health before registering the webhook", base)
    if not await wait_for_health(f"{base}/health", health_timeout_s, health_interval_s):
        log.error(
            "[telegram] %s/health did not answer within %g s; once it does, register the webhook by hand: %s",
            base,
            health_timeout_s,
            _manual(webhook),
        )
        return "failed"
    api = BotApi(bot_token, api_base_url)
    try:
        await api.call("setWebhook", {"url": webhook, "secret_token": secret_token})
    except TelegramApiError as exc:
        log.error("[telegram] setWebhook failed (%s); register it by hand: %s", exc, _manual(webhook))
        return "failed"
    finally:
        await api.aclose()
    log.info("[telegram] webhook registered: %s", webhook)
    return "registered"
