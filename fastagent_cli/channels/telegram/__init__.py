"""The Telegram channel: :func:`telegram_channel` for ``channels/telegram.py``, the pieces a custom
``route`` reuses, and :func:`telegram_send` for the scaffolded send tool."""

from fastagent_cli.channels.telegram.api import BotApi, Target, TelegramApiError
from fastagent_cli.channels.telegram.channel import TelegramChannel, telegram_channel
from fastagent_cli.channels.telegram.parse import TelegramRoute, default_telegram_route, telegram_envelope
from fastagent_cli.channels.telegram.send import telegram_send

__all__ = [
    "BotApi",
    "Target",
    "TelegramApiError",
    "TelegramChannel",
    "TelegramRoute",
    "default_telegram_route",
    "telegram_channel",
    "telegram_envelope",
    "telegram_send",
]
