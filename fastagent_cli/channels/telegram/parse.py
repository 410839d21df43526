"""Telegram updates as data: which message acts, who summoned whom, and the prompt envelope. Pure.

Updates are the Bot API's JSON objects (dicts). Only a fresh ``message`` or ``channel_post`` acts;
edits, callback queries and every other update kind are acknowledged and dropped before ``route``
(feature M3). :func:`default_telegram_route` answers private chats always, and a group only on a
reply to this bot (its id, from the token) or a ``mention`` entity naming it; a slash command does
not summon in a group (M4). Entity offsets are UTF-16 code units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastagent_cli.channels.kit.context_buffer import BufferEntry, clip_line
from fastagent_cli.channels.kit.invoke import referent

__all__ = [
    "TelegramRoute",
    "attachment_summary",
    "body_of",
    "bot_id_from_token",
    "buffer_line",
    "default_telegram_route",
    "is_group",
    "mentions_bot",
    "message_of",
    "place_of",
    "replies_to_bot",
    "sender_label",
    "telegram_envelope",
    "thread_of",
]

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TelegramRoute:
    """What ``route(update)`` returns to act on an update; omitted fields default from the message."""

    session: str | None = None
    """The conversation (default: ``<chat id>`` or ``<chat id>:<thread id>``)."""
    chat_id: int | str | None = None
    """Where to answer (default: the message's chat)."""
    thread_id: int | None = None
    """The thread to answer in (default: the message's thread)."""
    text: str | None = None
    """The prompt (default: :func:`telegram_envelope`); attachments and the HTML hint are added."""


def message_of(update: Mapping[str, Any]) -> Message | None:
    """The message that acts: a fresh message or channel post, never an edit."""
    for key in ("message", "channel_post"):
        value = update.get(key)
        if isinstance(value, Mapping) and isinstance(value.get("chat"), Mapping):
            return value
    return None


def is_group(message: Message) -> bool:
    return message["chat"].get("type") in ("group", "supergroup")


def thread_of(message: Message) -> int | None:
    """The forum topic (or private-chat topic) a message is in. Only a topic counts: in a
    supergroup without topics a reply carries ``message_thread_id`` too (its reply chain's root),
    and sending into that "thread" fails with "message thread not found"."""
    thread = message.get("message_thread_id")
    if message.get("is_topic_message") is not True:
        return None
    return thread if isinstance(thread, int) and not isinstance(thread, bool) and thread else None


def place_of(message: Message) -> str:
    """``<chat id>`` or ``<chat id>:<thread id>``: the default session, and the buffer's place."""
    thread = thread_of(message)
    chat = message["chat"]["id"]
    return f"{chat}:{thread}" if thread is not None else f"{chat}"


def sender_label(sender: Any) -> str | None:
    """``@username``, or ``First (id 42)`` for a user without one."""
    if not isinstance(sender, Mapping):
        return None
    if sender.get("username"):
        return f"@{sender['username']}"
    return f"{sender.get('first_name') or 'user'} (id {sender.get('id')})"


def attachment_summary(message: Message) -> str | None:
    if message.get("photo"):
        return "[photo]"
    document = message.get("document")
    if isinstance(document, Mapping):
        kind = f" ({document['mime_type']})" if document.get("mime_type") else ""
        return f"[document: {document.get('file_name') or 'file'}{kind}]"
    for key, label in (("voice", "[voice message]"), ("video", "[video]"), ("audio", "[audio]")):
        if message.get(key):
            return label
    return None


def body_of(message: Message) -> str | None:
    """What a message says: its text, else its caption, else what it carries."""
    for key in ("text", "caption"):
        value = message.get(key)
        if isinstance(value, str):
            return value
    return attachment_summary(message)


def buffer_body(message: Message) -> str:
    """One line for the context buffer: the body, with the attachment marker after a caption."""
    content = clip_line(body_of(message) or "")
    summary = attachment_summary(message)
    if summary and content and content != summary:
        return clip_line(f"{content} {summary}")
    return content


def _entities(message: Message) -> tuple[str, list[Any]]:
    if isinstance(message.get("text"), str):
        return message["text"], list(message.get("entities") or [])
    return str(message.get("caption") or ""), list(message.get("caption_entities") or [])


def _entity_text(text: str, entity: Mapping[str, Any]) -> str:
    units = text.encode("utf-16-le")
    start, length = int(entity.get("offset", 0)), int(entity.get("length", 0))
    return units[start * 2 : (start + length) * 2].decode("utf-16-le", "replace")


def _normal_username(name: str | None) -> str | None:
    flat = (name or "").strip().lstrip("@").lower()
    return flat or None


def mentions_bot(message: Message, bot_username: str | None) -> bool:
    """Does a ``mention`` entity name the bot? (Not a text search: ``@bot`` in code or a URL, and
    ``/cmd@bot``, are not mentions.)"""
    name = _normal_username(bot_username)
    if name is None:
        return False
    text, entities = _entities(message)
    return any(
        isinstance(e, Mapping) and e.get("type") == "mention" and _entity_text(text, e).lower() == f"@{name}"
        for e in entities
    )


def mentions_others(message: Message, bot_username: str | None) -> bool:
    """Does the message mention someone other than the bot?"""
    name = _normal_username(bot_username)
    text, entities = _entities(message)
    for entity in entities:
        if not isinstance(entity, Mapping):
            continue
        if entity.get("type") == "text_mention":
            return True
        if entity.get("type") == "mention" and _entity_text(text, entity).lower() != f"@{name}":
            return True
    return False


def replies_to_bot(message: Message, bot_id: int | None, bot_username: str | None = None) -> bool:
    """Is the message a reply to this bot (by id; by username when the id is unknown)?"""
    replied = message.get("reply_to_message")
    sender = replied.get("from") if isinstance(replied, Mapping) else None
    if not isinstance(sender, Mapping) or sender.get("is_bot") is not True:
        return False
    if bot_id is not None:
        return sender.get("id") == bot_id
    name = _normal_username(bot_username)
    return name is not None and _normal_username(sender.get("username")) == name


def bot_id_from_token(token: str) -> int | None:
    """A bot token is ``<bot id>:<secret>``."""
    head = token.split(":", 1)[0]
    return int(head) if head.isdigit() and int(head) > 0 else None


def default_telegram_route(
    update: Mapping[str, Any], *, bot_username: str | None = None, bot_id: int | None = None
) -> TelegramRoute | None:
    """Private chats always; groups on a reply to this bot or an @mention of it; else ``None``."""
    message = message_of(update)
    if message is None:
        return None
    if message["chat"].get("type") == "private":
        return TelegramRoute()
    if replies_to_bot(message, bot_id, bot_username) or mentions_bot(message, bot_username):
        return TelegramRoute()
    return None


def telegram_envelope(message: Message) -> str:
    """The default prompt: who wrote where (chat, thread, sender, a group flag), what it replies to
    (the quoted message whole up to 4 096 characters), the text or caption, and location, contact
    and poll payloads."""
    chat = message["chat"]
    meta = [f"chat {chat.get('id')} ({chat.get('type')})"]
    if thread_of(message) is not None:
        meta.append(f"thread {thread_of(message)}")
    sender = sender_label(message.get("from"))
    if sender:
        meta.append(f"from {sender}")
    lines = [f"[telegram: {', '.join(meta)}]"]
    if is_group(message):
        lines.append("[group chat — several people; each message names its sender]")
    replied = message.get("reply_to_message")
    if isinstance(replied, Mapping):
        who = sender_label(replied.get("from")) or f"msg {replied.get('message_id')}"
        quoted = body_of(replied)
        lines.append(
            f"[in reply to {who} (msg {replied.get('message_id')}): {referent(quoted or '(empty)')}]"
        )
    parts = [body_of(message) or ""]
    location = message.get("location")
    if isinstance(location, Mapping):
        parts.append(f"[location: {location.get('latitude')},{location.get('longitude')}]")
    contact = message.get("contact")
    if isinstance(contact, Mapping):
        name = " ".join(str(contact.get(k)) for k in ("first_name", "last_name") if contact.get(k))
        parts.append(f"[contact: {name} {contact.get('phone_number') or ''}]".replace(" ]", "]"))
    poll = message.get("poll")
    if isinstance(poll, Mapping):
        options = " / ".join(str(o.get("text")) for o in poll.get("options") or [] if isinstance(o, Mapping))
        parts.append(f"[poll: {poll.get('question')} — {options}]")
    lines.append("\n".join(p for p in parts if p))
    return "\n".join(lines)


def buffer_line(entry: BufferEntry) -> str:
    """``@alice (msg 12, reply to msg 10): text``: one line of the fold, and its budget cost."""
    meta = [f"msg {entry['msg']}"] if entry.get("msg") is not None else []
    if entry.get("reply") is not None:
        meta.append(f"reply to msg {entry['reply']}")
    where = f" ({', '.join(meta)})" if meta else ""
    return f"{entry.get('sender') or 'someone'}{where}: {entry['body']}"
