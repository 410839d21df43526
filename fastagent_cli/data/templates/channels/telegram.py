"""A Telegram bot for this agent (written by `fastagent add telegram`).

fastagent mounts POST /telegram for this file. It reads TELEGRAM_BOT_TOKEN (from @BotFather) and
TELEGRAM_SECRET_TOKEN (generated into .env; Telegram sends it back with every update) from .env.
Private chats are always answered; in groups the bot answers a reply to it or an @mention, and
keeps the rest of the discussion as context (turn privacy mode off: @BotFather -> /setprivacy).
`fastagent dev --tunnel` registers the webhook.

Options: route=(update -> TelegramRoute | None) to decide whether and where to answer (reuse
default_telegram_route and telegram_envelope from fastagent_cli.channels), bot_username=..., and
on_error below, the text a user reads when a turn fails.
"""

from __future__ import annotations

from fastagent_cli.channels import telegram_channel

channel = telegram_channel(
    # A development bot shows the real error; for a public bot delete this line: users then read
    # a neutral message and the details stay in the server log.
    on_error=lambda failed: f"⚠️ {failed.details}",
)
