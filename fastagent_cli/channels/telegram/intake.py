"""Telegram acceptance: what an update the ingress let through causes, made durable before the ``200``
(:class:`TelegramIntake`): a turn record (:func:`turn_record`), a line of the group's context buffer
(:func:`buffer_entry`, rendered by :func:`~.parse.buffer_line`), a stop command, or nothing. The record
builders are pure.

Where a turn answers (:func:`reply_target`): the route's chat and thread, defaulting to the
message's; in a group the answer quotes the summoning message, but only when it goes to that
message's own chat and thread (feature M7).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from typing import Any

from fastagent_cli.channels.kit.context_buffer import BufferEntry
from fastagent_cli.channels.kit.routes import decide_route
from fastagent_cli.channels.kit.stop import dispatch_stop
from fastagent_cli.channels.kit.turn_store import TurnRecord
from fastagent_cli.channels.telegram.api import Target, TelegramApiError
from fastagent_cli.channels.telegram.media import message_files, message_images, own_files, own_images
from fastagent_cli.channels.telegram.parse import (
    TelegramRoute,
    buffer_body,
    default_telegram_route,
    is_group,
    message_of,
    place_of,
    sender_label,
    telegram_envelope,
    thread_of,
)
from fastagent_cli.channels.telegram.runtime import TelegramRuntime

__all__ = ["TelegramIntake", "buffer_entry", "reply_target", "turn_record"]

log = logging.getLogger("fastagent.channel")

_STOP = re.compile(r"^/stop(?:@([A-Za-z0-9_]+))?$", re.IGNORECASE)


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
        "sender": (message.get("from") or {}).get("id"),
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


class TelegramIntake(TelegramRuntime):
    """The acceptance boundary of one mounted channel (its state and runner are the runtime's)."""

    async def accept(self, update: dict[str, Any]) -> None:
        """Everything an update causes that must be durable before the 200."""
        if "callback_query" in update and await self.approvals.on_callback(update):
            return  # an approval button (answered, or refused to someone who may not)
        message = message_of(update)
        if message is None:
            return
        update_id = update.get("update_id")
        delivery = str(update_id) if isinstance(update_id, int) else None
        if delivery is not None and delivery in self.seen:
            log.debug("[telegram] update %s was delivered before; ignored", delivery)
            return
        if is_group(message):
            self._ask_identity_again()
        route = self._decide(update)
        place = place_of(message)
        session = (route.session if route and route.session else None) or place
        stop = _STOP.match(str(message.get("text") or "").strip())
        if stop:
            addressed = stop.group(1)
            if addressed is None or (self.bot_username and addressed.lower() == self.bot_username.lower()):
                await self._stop(message, route, session)
            if delivery is not None:
                self.seen.add(delivery)
            return
        if route is None:
            if is_group(message) and buffer_body(message):
                await self.buffers.push(place, buffer_entry(message))
            if delivery is not None:
                self.seen.add(delivery)
            return
        record = turn_record(message, route, session, place, delivery)
        if record is None:
            return
        if await self.turns.add(record):
            if delivery is not None:
                self.seen.add(delivery)
            self.queue.accept(record)

    def _decide(self, update: Mapping[str, Any]) -> TelegramRoute | None:
        return decide_route(
            self.route,
            lambda: default_telegram_route(update, bot_username=self.bot_username, bot_id=self.bot_id),
            update,
            TelegramRoute,
            lambda d: TelegramRoute(**{k: d.get(k) for k in ("session", "chat_id", "thread_id", "text")}),
            label="[telegram]",
            argument="update",
            dropped=f"update {update.get('update_id')}",
        )

    async def _stop(self, message: Mapping[str, Any], route: TelegramRoute | None, session: str) -> None:
        feedback = await dispatch_stop(self.control, session, "[telegram]")
        try:
            await self.api.send_message(reply_target(message, route), feedback, html=False)
        except TelegramApiError as exc:
            log.warning("[telegram] could not answer /stop: %s", exc)
