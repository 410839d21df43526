"""Feishu/Lark ``im.message.receive_v1`` events as data (features O5, O8-O10, O12). Pure.

A message's ``content`` is a JSON string shaped by ``message_type``: :func:`decode_content` is the one
decoder (text with mention placeholders restored, rich ``post`` paragraphs, cards as the platform
hands them back, images, files, audio, video, locations), returning the text and the resources
(``{kind, key, name}``) to load. Resources are addressed by their carrying message id *and* key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastagent_cli.channels.kit.context_buffer import BufferEntry

__all__ = [
    "FeishuRoute",
    "buffer_line",
    "decode_content",
    "default_feishu_route",
    "feishu_envelope",
    "mentions_bot",
    "sender_id",
]


@dataclass(frozen=True, slots=True)
class FeishuRoute:
    """What ``route(event)`` returns to act on a message; omitted fields default from it."""

    session: str | None = None
    chat_id: str | None = None
    text: str | None = None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _nodes(nodes: Any, resources: list[dict[str, Any]] | None) -> str:
    if not isinstance(nodes, list):
        return ""
    parts: list[str] = []
    for node in nodes:
        if not isinstance(node, Mapping):
            continue
        tag = node.get("tag")
        if tag == "at":
            parts.append(f"@{_text(node.get('user_name')) or _text(node.get('user_id')) or 'user'}")
        elif tag == "a":
            href = _text(node.get("href"))
            parts.append(
                f"{_text(node.get('text')) or href} ({href})" if href else str(node.get("text") or "")
            )
        elif tag == "img":
            if _text(node.get("image_key")) and resources is not None:
                resources.append({"kind": "image", "key": node["image_key"]})
            parts.append("[image]")
        elif tag == "media":
            if _text(node.get("file_key")) and resources is not None:
                resources.append(
                    {"kind": "video", "key": node["file_key"], "name": _text(node.get("file_name"))}
                )
            parts.append("[video]")
        elif tag == "code_block":
            parts.append(
                f"\n```{(_text(node.get('language')) or '').lower()}\n{node.get('text') or ''}\n```\n"
            )
        elif tag == "note":
            parts.append(_nodes(node.get("elements"), resources))
        elif _text(node.get("text")):
            parts.append(str(node["text"]))
        elif _text(node.get("placeholder")):
            parts.append(str(node["placeholder"]))
    return "".join(parts).strip()


def decode_content(message_type: Any, content: Any, mentions: Any = None) -> tuple[str, list[dict[str, Any]]]:
    """``(text, resources)`` of one message body; unreadable input is a visible marker."""
    kind = message_type if isinstance(message_type, str) else "unknown"
    try:
        body = json.loads(content) if isinstance(content, str) else None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return f"[unreadable {kind} message]", []
    resources: list[dict[str, Any]] = []
    if kind == "text":
        text = str(body.get("text") or "")
        for mention in mentions or []:
            if isinstance(mention, Mapping) and _text(mention.get("key")):
                text = text.replace(mention["key"], f"@{mention.get('name') or 'user'}")
        return text, resources
    if kind in ("post", "interactive", "card"):
        lines = [str(body["title"])] if _text(body.get("title")) else []
        paragraphs = body.get("content") if kind == "post" else body.get("elements")
        for paragraph in paragraphs if isinstance(paragraphs, list) else []:
            line = _nodes(
                paragraph if isinstance(paragraph, list) else [paragraph],
                resources if kind == "post" else None,
            )
            if line:
                lines.append(line)
        return ("\n".join(lines) or f"[{kind} message]"), resources
    if kind == "image":
        if _text(body.get("image_key")):
            resources.append({"kind": "image", "key": body["image_key"]})
        return "[image]", resources
    if kind in ("file", "audio", "media"):
        name = _text(body.get("file_name")) or ("voice-message" if kind == "audio" else kind)
        if _text(body.get("file_key")):
            resources.append(
                {"kind": {"media": "video"}.get(kind, kind), "key": body["file_key"], "name": name}
            )
        label = {"file": "file", "audio": "voice message", "media": "video"}[kind]
        return (f"[{label}: {name}]" if kind != "audio" else "[voice message]"), resources
    if kind == "location":
        where = f"{body['name']} — " if _text(body.get("name")) else ""
        return f"[location: {where}{body.get('latitude', '?')},{body.get('longitude', '?')}]", resources
    return f"[{kind} message]", resources


def sender_id(sender: Any) -> str | None:
    ids = sender.get("sender_id") if isinstance(sender, Mapping) else None
    if not isinstance(ids, Mapping):
        return None
    for key in ("open_id", "user_id", "union_id"):
        if _text(ids.get(key)):
            return str(ids[key])
    return None


def mentions_bot(message: Mapping[str, Any], bot_open_id: str | None) -> bool:
    if not bot_open_id:
        return False
    return any(
        isinstance(m, Mapping) and isinstance(m.get("id"), Mapping) and m["id"].get("open_id") == bot_open_id
        for m in message.get("mentions") or []
    )


def feishu_envelope(event: Mapping[str, Any], kind: str = "feishu") -> str:
    """The default prompt: ``[<kind>: chat …, topic …, from user …, msg …]``, the group note, the
    quoted-message marker and the decoded text."""
    message = event.get("message")
    if not isinstance(message, Mapping):
        return ""
    who = sender_id(event.get("sender"))
    meta = [
        f"chat {message.get('chat_id')} ({message.get('chat_type')})",
        *([f"topic {message['thread_id']}"] if message.get("thread_id") else []),
        *([f"from user {who}"] if who else []),
        f"msg {message.get('message_id')}",
    ]
    note = (
        "\n[group chat — multiple people; each message is prefixed with its sender]"
        if message.get("chat_type") == "group"
        else ""
    )
    reply = f"\n[in reply to msg {message['parent_id']}]" if message.get("parent_id") else ""
    text, _ = decode_content(message.get("message_type"), message.get("content"), message.get("mentions"))
    return f"[{kind}: {', '.join(meta)}]{note}{reply}\n{text}"


def default_feishu_route(event: Mapping[str, Any], *, bot_open_id: str | None = None) -> FeishuRoute | None:
    """Users only; a direct message always; a group only when the bot is in ``mentions`` (matched by
    its ``open_id``: fail-closed until the bot's identity is known)."""
    message = event.get("message")
    sender = event.get("sender")
    if (
        not isinstance(message, Mapping)
        or not isinstance(sender, Mapping)
        or sender.get("sender_type") != "user"
    ):
        return None
    if message.get("chat_type") == "p2p" or mentions_bot(message, bot_open_id):
        return FeishuRoute()
    return None


def buffer_line(entry: BufferEntry) -> str:
    meta = f"msg {entry.get('msg')}" + (f", reply to msg {entry['reply']}" if entry.get("reply") else "")
    return f"{entry.get('sender') or 'someone'} ({meta}): {entry['body']}"
