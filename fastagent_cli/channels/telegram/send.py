"""``telegram_send``: what the scaffolded ``tools/telegram_send.py`` tool calls (feature K16).

It delivers what no channel carries: a scheduled turn's report, a file, a message to another chat.
Text goes out in Telegram HTML (plain text when Telegram rejects the markup), split into messages
of at most 4 096 characters; a file goes out as a document, or as a photo with ``as_photo``. It
uses the channel's Bot API client (timeouts, ``retry_after``), ``TELEGRAM_BOT_TOKEN`` and
``TELEGRAM_API_BASE_URL``. Every problem is an exception whose message the agent can act on.
"""

from __future__ import annotations

from pathlib import Path

from fastagent_cli.channels.kit import send as kit_send
from fastagent_cli.channels.telegram.api import BOT_TOKEN_ENV, BotApi, Target
from fastagent_cli.channels.telegram.html import split_message, telegram_html

__all__ = ["MAX_UPLOAD_BYTES", "MAX_UPLOAD_PHOTO_BYTES", "telegram_send"]

MAX_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_UPLOAD_PHOTO_BYTES = 10 * 1024 * 1024


async def telegram_send(
    chat_id: int | str,
    *,
    text: str | None = None,
    path: str | None = None,
    caption: str | None = None,
    as_photo: bool = False,
    thread_id: int | None = None,
    bot_token: str | None = None,
    api_base_url: str | None = None,
) -> str:
    """Send ``text`` or the file at ``path`` (exactly one) to ``chat_id``; a sentence saying what
    was sent."""
    token = kit_send.bot_token(bot_token, BOT_TOKEN_ENV, "put the bot token from @BotFather in .env")
    kit_send.exactly_one(text, path)
    if text is not None and (caption is not None or as_photo):
        raise ValueError("`caption` and `as_photo` go with `path`; with `text`, put everything in the text")
    api = BotApi(token, api_base_url)
    async with kit_send.sending(api):
        if text is not None:
            kit_send.check_text(text)
            await api.send_message(Target(chat_id, thread_id), text)
            parts = len(split_message(telegram_html(text), html_mode=True))
            return (
                f"sent {parts} messages to chat {chat_id}"
                if parts > 1
                else f"sent a message to chat {chat_id}"
            )
        return await _send_file(api, chat_id, Path(str(path)), caption, as_photo, thread_id)


async def _send_file(
    api: BotApi, chat_id: int | str, path: Path, caption: str | None, as_photo: bool, thread_id: int | None
) -> str:
    content = await kit_send.read_upload(path)
    cap = MAX_UPLOAD_PHOTO_BYTES if as_photo else MAX_UPLOAD_BYTES
    if len(content) > cap:
        raise ValueError(
            f"{path.name} is {len(content)} bytes; Telegram takes at most {cap // (1024 * 1024)} MB here"
        )
    field, method = ("photo", "sendPhoto") if as_photo else ("document", "sendDocument")
    params = {"chat_id": chat_id, "message_thread_id": thread_id, "caption": caption}
    await api.call(method, params, upload=(field, path.name, content))
    return f"sent {path.name} to chat {chat_id}"
