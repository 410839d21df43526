"""Send a message or a file to a Telegram chat through the bot (written by `fastagent add telegram`).

For turns no channel delivers (a schedule, a wake-up) and for files; in a chat turn the channel
already sends the answer. Needs TELEGRAM_BOT_TOKEN in .env.
"""

from __future__ import annotations

from fastagent_cli import tool


@tool
async def telegram_send(
    chat_id: int | str,
    text: str | None = None,
    path: str | None = None,
    caption: str | None = None,
    as_photo: bool = False,
    message_thread_id: int | None = None,
) -> str:
    """Send to a Telegram chat: a text message (Telegram HTML; long text is split into several
    messages) or a local file (a document, or a photo with as_photo). Exactly one of text / path.

    Use it for a turn no channel is carrying (a scheduled or self-scheduled turn: name the chat id in
    its prompt), for a file, or to reach another chat. Do not use it to answer the current turn: the
    Telegram channel already delivers your answer, so calling it too would send it twice. In a chat
    turn the chat id is on the [telegram: chat ...] line.

    Args:
        chat_id: The target chat id.
        text: The message, in Telegram HTML (<b>, <i>, <code>, <pre>, <a href>).
        path: The absolute path of a local file to send instead of text.
        caption: A caption for the file.
        as_photo: Send the file as a photo (an image shown inline) instead of a document.
        message_thread_id: The thread (forum topic) to post in, from the [telegram: ...] line.
    """
    from fastagent_cli.channels import telegram_send as send

    return await send(
        chat_id, text=text, path=path, caption=caption, as_photo=as_photo, thread_id=message_thread_id
    )
