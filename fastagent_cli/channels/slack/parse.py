"""Slack Events API payloads as data: which events act, who is mentioned, the prompt envelope. Pure.

A message event acts when it is new human content (features N8): ``message`` (in a DM, a channel, a
private channel or a group DM) or ``app_mention``, with a user, no ``bot_id``, not ``hidden``, and
no subtype except ``file_share`` and ``thread_broadcast``. Edits (``message_changed``), deletes and
service subtypes never act. Mentions come in two forms, ``<@U123>`` and ``<@U123|name>``; broadcasts
(``<!here>``, ``<!channel>``, ``<!everyone>``) and user groups (``<!subteam^S1>``) address people too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastagent_cli.channels.kit.context_buffer import BufferEntry, clip_line
from fastagent_cli.channels.kit.invoke import truncate

__all__ = [
    "SlackRoute",
    "buffer_line",
    "default_slack_route",
    "file_ids",
    "has_mention",
    "has_user_mention",
    "is_direct",
    "is_group",
    "is_human_message",
    "mentions_user",
    "message_text",
    "place_key",
    "slack_envelope",
    "strip_mentions",
    "team_id_of",
]

Event = Mapping[str, Any]
_HUMAN_SUBTYPES = {"file_share", "thread_broadcast"}
_USER_MENTION = r"<@[A-Z0-9]+(?:\|[^>]*)?>"
_ANY_MENTION = re.compile(
    rf"(?:{_USER_MENTION}|<!(?:here|channel|everyone)(?:\|[^>]*)?>|<!subteam\^[^>]*>)", re.IGNORECASE
)
_USER_MENTION_RE = re.compile(_USER_MENTION, re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SlackRoute:
    """What ``route(envelope)`` returns to act on a message; omitted fields default from it."""

    session: str | None = None
    """The conversation (default: ``slack:<team>:<channel>:<thread root ts>``)."""
    channel_id: str | None = None
    """Where to answer (default: the message's channel)."""
    thread_ts: str | None = None
    """The thread to answer in (default: the message's thread, or a new thread on it)."""
    top_level: bool = False
    """Answer at the channel's top level instead of in a thread (classic rendering only)."""
    text: str | None = None
    """The prompt (default: :func:`slack_envelope`)."""


def is_human_message(event: Any) -> bool:
    if not isinstance(event, Mapping) or event.get("type") not in ("message", "app_mention"):
        return False
    if not event.get("channel") or not event.get("ts") or not event.get("user"):
        return False
    if event.get("bot_id") or event.get("hidden"):
        return False
    subtype = event.get("subtype")
    return subtype is None or subtype in _HUMAN_SUBTYPES


def is_direct(event: Event) -> bool:
    return event.get("channel_type") == "im"


def is_group(event: Event) -> bool:
    return not is_direct(event) and (
        event.get("type") == "app_mention" or event.get("channel_type") is not None
    )


def has_mention(text: str) -> bool:
    """Does ``text`` address anyone: a user, a broadcast or a user group?"""
    return bool(_ANY_MENTION.search(text))


def has_user_mention(text: str) -> bool:
    return bool(_USER_MENTION_RE.search(text))


def mentions_user(text: str, user_id: str) -> bool:
    return bool(re.search(rf"<@{re.escape(user_id)}(?:\|[^>]*)?>", text, re.IGNORECASE))


def strip_mentions(text: str, replacement: str = " ") -> str:
    return _ANY_MENTION.sub(replacement, text)


def team_id_of(envelope: Mapping[str, Any]) -> str | None:
    """The workspace: ``team_id``, else the event's ``team``, an authorization's, or the enterprise."""
    event = envelope.get("event") if isinstance(envelope.get("event"), Mapping) else {}
    authorizations = [a for a in envelope.get("authorizations") or [] if isinstance(a, Mapping)]
    for candidate in (
        envelope.get("team_id"),
        event.get("team") if isinstance(event, Mapping) else None,
        *(a.get("team_id") for a in authorizations),
        envelope.get("context_team_id"),
        envelope.get("enterprise_id"),
        *(a.get("enterprise_id") for a in authorizations),
    ):
        if isinstance(candidate, str) and candidate:
            return candidate
    return None


def file_ids(event: Event) -> list[str]:
    out: list[str] = []
    for item in event.get("files") or []:
        if isinstance(item, Mapping) and isinstance(item.get("id"), str) and item["id"] not in out:
            out.append(item["id"])
    return out


def message_text(event: Event) -> str:
    """The text, plus a marker for the files it carries."""
    text = str(event.get("text") or "").strip()
    count = len(file_ids(event))
    if not count:
        return text
    marker = f"[{count} attached file{'' if count == 1 else 's'}]"
    return f"{text}\n{marker}" if text else marker


def place_key(team: str, event: Event) -> str:
    """The context-buffer bucket: the channel's main timeline, or one thread of it."""
    base = f"{team}:{event.get('channel') or 'unknown-channel'}"
    return f"{base}:root:{event['thread_ts']}" if event.get("thread_ts") else base


def buffer_line(entry: BufferEntry) -> str:
    meta = f"msg {entry.get('msg')}" + (f", thread root {entry['reply']}" if entry.get("reply") else "")
    return f"{entry.get('sender') or 'someone'} ({meta}): {entry['body']}"


def slack_envelope(envelope: Mapping[str, Any]) -> str:
    """The default prompt: where and from whom, the group note, Slack's open context, the text."""
    event = envelope.get("event")
    if not isinstance(event, Mapping) or not event.get("channel"):
        return ""
    direct = is_direct(event)
    meta = [
        f"team {team_id_of(envelope) or 'unknown-team'}",
        f"channel {event['channel']} ({'direct' if direct else 'group'})",
        *([f"thread {event['thread_ts']}"] if event.get("thread_ts") else []),
        *([f"msg {event['ts']}"] if event.get("ts") else []),
        *([f"from user {event['user']}"] if event.get("user") else []),
    ]
    entities = [
        e
        for e in ((event.get("app_context") or {}).get("entities") or [])
        if isinstance(e, Mapping) and e.get("type") and e.get("value")
    ][:5]
    context = ", ".join(
        f"{truncate(clip_line(str(e['type'])), 80)}={truncate(clip_line(str(e['value'])), 200)}"
        for e in entities
    )
    scope = "" if direct else "\n[group chat — multiple people; recent discussion is sender-prefixed]"
    opened = f"\n[Slack context currently open for the user: {context}]" if context else ""
    return f"[slack: {', '.join(meta)}]{scope}{opened}\n{message_text(event)}"


def default_slack_route(envelope: Mapping[str, Any]) -> SlackRoute | None:
    """Explicit summons: every human DM and every ``app_mention``."""
    event = envelope.get("event")
    if not is_human_message(event):
        return None
    assert isinstance(event, Mapping)
    return SlackRoute() if is_direct(event) or event.get("type") == "app_mention" else None
