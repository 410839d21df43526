"""The Telegram channel: ``POST /telegram`` -> routed update -> durable turn -> live answer.

::

    # channels/telegram.py
    from fastagent_cli.channels import telegram_channel

    channel = telegram_channel()   # TELEGRAM_BOT_TOKEN and TELEGRAM_SECRET_TOKEN from .env

Checks (feature M1): a method other than POST is ``405 "POST only\\n"``; a wrong or missing
``X-Telegram-Bot-Api-Secret-Token`` (constant time) is ``401 "invalid secret token\\n"``; a body over
1 MiB is ``413 "payload too large\\n"``; a body that is not a JSON object is ``400 "invalid json\\n"``.
Everything else is acknowledged ``200``, after what it causes is durable:

* an update without a fresh message (an edit, a callback) is dropped;
* a delivery already seen or pending (Telegram redelivers until it gets its 200) is dropped;
* ``/stop`` or ``/stop@<this bot>`` aborts the session's active run through ``ctx.control`` (the
  session hub; queued turns keep their place), answers ``⏹ Stopped.`` or ``Nothing is running.``,
  and never becomes a turn (``/stop@<another bot>`` is ignored);
* an unrouted group message joins the group's context buffer (persisted first: a failed write is a
  ``500`` and Telegram redelivers);
* a routed message becomes a turn intent in ``turns`` (persisted first, same rule), queued FIFO
  per session. A busy session gets ``⏳ Queued ...``, reply-quoted, which the turn later edits into
  its answer.

At start the channel loads its state, replays the turns a crash or a shutdown interrupted (in
arrival order; a turn interrupted 3 times is dropped and its asker told), and calls ``getMe`` once
for its username and to warn when privacy mode hides group messages. State lives in
``<state root>/channels/telegram/`` (``turns``, ``buffers``, ``seen``, ``files/``), or in the
shared database (``state_backend = "postgres"``): then every instance behind the webhook URL sees
the same turns, seen ring and buffers, and a turn accepted by an instance that stops is taken over
and run by another, once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar

from fastagent_cli.channels.kit.invoke import OnError
from fastagent_cli.channels.kit.routes import ChannelRoutes, Route
from fastagent_cli.channels.telegram.api import BOT_TOKEN_ENV, SECRET_TOKEN_ENV
from fastagent_cli.channels.telegram.ingress import TelegramIngress
from fastagent_cli.channels.telegram.intake import TelegramIntake
from fastagent_cli.channels.telegram.register import register_telegram_webhook
from fastagent_cli.channels.telegram.runtime import KIND
from fastagent_cli.errors import ServeError

__all__ = [
    "BOT_TOKEN_ENV",
    "SECRET_TOKEN_ENV",
    "TelegramChannel",
    "telegram_channel",
]


@dataclass(kw_only=True)
class TelegramChannel:
    """``channel(ctx)`` mounts ``/telegram``; ``register_webhook(url)`` calls ``setWebhook``."""

    kind: ClassVar[str] = KIND
    secret_token: str | None = None
    bot_token: str | None = None
    route: Route | None = None
    on_error: OnError | None = None
    bot_username: str | None = None
    api_base_url: str | None = None

    def _tokens(self) -> tuple[str, str]:
        secret = self.secret_token if self.secret_token is not None else os.environ.get(SECRET_TOKEN_ENV, "")
        token = self.bot_token if self.bot_token is not None else os.environ.get(BOT_TOKEN_ENV, "")
        return secret, token

    def __call__(self, ctx: Any) -> ChannelRoutes:
        secret, token = self._tokens()
        if not secret:
            raise ServeError(
                f"telegram_channel needs a secret token: set {SECRET_TOKEN_ENV} in .env (`fastagent add "
                "telegram` generates one; without it anyone could post updates)"
            )
        if not token:
            raise ServeError(
                f"telegram_channel needs the bot token: set {BOT_TOKEN_ENV} in .env (@BotFather -> /newbot)"
            )
        return TelegramIngress(TelegramIntake(self, ctx, token), secret).routes()

    async def register_webhook(self, public_url: str) -> str:
        """Point the bot at ``<public_url>/telegram`` once that URL answers ``/health``."""
        secret, token = self._tokens()
        return await register_telegram_webhook(
            public_url, bot_token=token, secret_token=secret, api_base_url=self.api_base_url
        )


def telegram_channel(
    *,
    secret_token: str | None = None,
    bot_token: str | None = None,
    route: Route | None = None,
    on_error: OnError | None = None,
    bot_username: str | None = None,
    api_base_url: str | None = None,
) -> TelegramChannel:
    """The Telegram channel (see the module doc). Tokens default to ``TELEGRAM_SECRET_TOKEN`` and
    ``TELEGRAM_BOT_TOKEN``, read when the channel is mounted; ``route(update)`` decides whether and
    where to answer (default :func:`~fastagent_cli.channels.telegram.parse.default_telegram_route`);
    ``on_error(failure)`` is the text a user reads when a turn fails (``""``: say nothing);
    ``api_base_url`` (or ``TELEGRAM_API_BASE_URL``) points at another Bot API server."""
    return TelegramChannel(**locals())
