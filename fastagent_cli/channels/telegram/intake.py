"""What an accepted Telegram message becomes: a turn record (:func:`turn_record`) or a line of the
group's context buffer (:func:`buffer_entry`, rendered by :func:`buffer_line`). Pure.

Where a turn answers (:func:`reply_target`): the route's chat and thread, defaulting to the
message's; in a group the answer quotes the summoning message, but only when it goes to that
message's own chat and thread (feature M7).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from fastagent_cli.channels.kit.context_buffer import BufferEntry
from fastagent_cli.channels.kit.turn_store import TurnRecord
from fastagent_cli.channels.telegram.api import Target
from fastagent_cli.channels.telegram.media import message_files, message_images, own_files, own_images
from fastagent_cli.channels.telegram.parse import (
    TelegramRoute,
    buffer_body,
    sender_label,
    telegram_envelope,
    thread_of,
)

__all__ = ["buffer_entry", "buffer_line", "reply_target", "turn_record"]


def reply_target(message: Mapping[str, Any], route: TelegramRoute | None) -> Target:
    chat = route.chat_id if route and route.chat_id is not None else message["chat"]["id"]
    thread = route.thread_id if route and route.thread_id is not None else thread_of(message)
    same = str(chat) == str(message["chat"]["id"]) and thread == thread_of(message)
    quote = message.get("message_id") if message["chat"].get("type") != "private" and same else None
    return Target(chat, thread, quote if isinstance(quote, int) else None)


def turn_record(
    message: Mapping[str, Any], route: TelegramRoute, session: str, place: str, delivery: str | None
) -> TurnRecord | None:
    """The intent to persist, or ``None`` for a message with nothing to answer."""
    text = route.text if route.text is not None else telegram_envelope(message)
    images, files = message_images(message), message_files(message)
    if not text.strip() and not images and not files:
        return None
    target = reply_target(message, route)
    return {
        "id": delivery if delivery is not None else f"local-{time.time_ns()}",
        "session": session,
        "place": place,
        "text": text,
        "chat": target.chat_id,
        "thread": target.thread_id,
        "reply_to": target.reply_to,
        "images": images,
        "files": files,
        "attempts": 0,
    }


def buffer_entry(message: Mapping[str, Any]) -> BufferEntry:
    """An unsummoned group message: who, what (one line), its id, what it replies to, and its own
    attachments (so a later summon can load them)."""
    replied = message.get("reply_to_message")
    entry: BufferEntry = {
        "sender": sender_label(message.get("from")) or sender_label(message.get("sender_chat")) or "someone",
        "body": buffer_body(message),
        "msg": message.get("message_id"),
        "reply": replied.get("message_id") if isinstance(replied, Mapping) else None,
    }
    if own_images(message):
        entry["images"] = own_images(message)
    if own_files(message):
        entry["files"] = own_files(message)
    return entry


def buffer_line(entry: BufferEntry) -> str:
    """``@alice (msg 12, reply to msg 10): text``: one line of the fold, and its budget cost."""
    meta = [f"msg {entry['msg']}"] if entry.get("msg") is not None else []
    if entry.get("reply") is not None:
        meta.append(f"reply to msg {entry['reply']}")
    where = f" ({', '.join(meta)})" if meta else ""
    return f"{entry.get('sender') or 'someone'}{where}: {entry['body']}"
