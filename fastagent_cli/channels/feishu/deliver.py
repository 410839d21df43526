"""Delivering one Feishu/Lark turn as a streaming card (feature O11).

A card entity is created (``cardkit/v1/cards``, streaming on) and mounted with a reply or a send
(or a queued turn's ``⏳ Queued`` card is taken over); full-text snapshots of its two elements are
written at most every :data:`STREAM_THROTTLE_S` with a strictly increasing ``sequence`` (cardkit
allows 10 a second per card and 50 per app; text edits are capped at 20 a message, which is why
the preview is a card). On ``completed`` the same card settles into the Markdown answer; an answer
over :data:`~fastagent_cli.channels.feishu.card.CARD_MARKDOWN_MAX_BYTES` settles with its first
part and the rest follows as text messages. Degrading: a card that cannot be created or mounted
becomes a static text placeholder (edited once, into the answer, or replaced); a stream the platform
closed mid-turn freezes, and the settle still lands; a failed settle deletes the card and sends the
answer anew.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from fastagent_cli.channels.feishu.api import (
    FeishuApi,
    FeishuApiError,
    FeishuTarget,
    chunk_text,
    streaming_closed,
)
from fastagent_cli.channels.feishu.card import (
    ANSWER_ELEMENT,
    CARD_MARKDOWN_MAX_BYTES,
    PROCESS_ELEMENT,
    card_entity_content,
    final_card,
    streaming_card,
    utf8_prefix,
)
from fastagent_cli.channels.kit.invoke import OnError
from fastagent_cli.channels.kit.preview import THINKING_PLACEHOLDER, progress, revealed_answer, thinking_line
from fastagent_cli.channels.kit.reply import NO_REPLY, LiveReply
from fastagent_cli.contract import AgentEvent

__all__ = ["NO_REPLY", "STREAM_THROTTLE_S", "Mounted", "mount_preview", "settle_preview", "stream_reply"]

log = logging.getLogger("fastagent.channel")

STREAM_THROTTLE_S = 1.0
PROCESS_MAX = 1000


@dataclass(slots=True)
class Mounted:
    """A preview in the chat: a card (``card_id``) or a text placeholder; ``thread_id`` when the
    platform put it in a thread."""

    message_id: str
    card_id: str | None = None
    thread_id: str | None = None
    sequence: int = 0

    def next(self) -> int:
        self.sequence += 1
        return self.sequence


async def mount_preview(api: FeishuApi, target: FeishuTarget, initial: str, label: str) -> Mounted:
    try:
        card_id = await api.create_card(streaming_card(initial))
        sent = await api.deliver(target, "interactive", card_entity_content(card_id))
        if not sent.get("message_id"):
            raise api.error("mount card", 200, "the answer carried no message_id")
        return Mounted(str(sent["message_id"]), card_id, sent.get("thread_id"))
    except FeishuApiError as exc:
        log.warning("%s streaming card unavailable, the preview is a static text message: %s", label, exc)
        sent = await api.deliver(target, "text", json.dumps({"text": initial}, ensure_ascii=False))
        if not sent.get("message_id"):
            raise api.error("sendMessage", 200, "the answer carried no message_id") from None
        return Mounted(str(sent["message_id"]), None, sent.get("thread_id"))


async def settle_preview(api: FeishuApi, target: FeishuTarget, preview: Mounted | None, text: str) -> None:
    """Turn the preview into ``text`` (see the module doc); an empty ``text`` deletes it."""
    if not text.strip():
        if preview is not None:
            with contextlib.suppress(FeishuApiError):
                await api.delete(preview.message_id)
        return
    if preview is not None and preview.card_id is not None:
        head, *rest = chunk_text(text, CARD_MARKDOWN_MAX_BYTES)
        try:
            await api.update_card(preview.card_id, final_card(head), preview.next())
        except FeishuApiError as exc:
            log.warning("[%s] could not settle the card (%s); sending the answer anew", api.kind, exc)
        else:
            follow = target if target.in_thread else FeishuTarget(target.chat_id)
            for part in rest:  # the settled card is authoritative: never resend it
                await api.send_text(follow, part)
            return
    elif preview is not None and len(chunk_text(text)) == 1:
        try:
            await api.edit_text(preview.message_id, text)
            return
        except FeishuApiError as exc:
            log.warning("[%s] could not edit the placeholder (%s); sending the answer anew", api.kind, exc)
    if preview is not None:
        with contextlib.suppress(FeishuApiError):
            await api.delete(preview.message_id)
    await api.send_text(target, text)


class _Card(LiveReply[FeishuApi, FeishuTarget]):
    def __init__(self, api: FeishuApi, target: FeishuTarget, preview: Mounted | None, label: str) -> None:
        super().__init__(api, target, throttle_s=STREAM_THROTTLE_S, label=label)
        self.preview = preview
        self.mounted = preview is not None
        self.frozen = False
        self.last_process = ""
        self.last_answer = ""

    def process(self) -> str:
        text = progress(self.view, thinking_line(self.view, 280))
        if text:
            return text if len(text) <= PROCESS_MAX else "…\n" + text[-(PROCESS_MAX - 2) :].split("\n", 1)[-1]
        return THINKING_PLACEHOLDER if not revealed_answer(self.view, STREAM_THROTTLE_S).strip() else ""

    async def flush(self) -> None:
        process = self.process()
        if not self.mounted:
            self.mounted = True
            self.preview = await mount_preview(self.api, self.target, process, self.label)
            self.last_process = process
            return
        preview = self.preview
        if preview is None or preview.card_id is None or self.frozen:
            return
        try:
            if process != self.last_process:
                self.last_process = process
                await self.api.update_element(preview.card_id, PROCESS_ELEMENT, process, preview.next())
            answer = utf8_prefix(revealed_answer(self.view, STREAM_THROTTLE_S), CARD_MARKDOWN_MAX_BYTES)
            if answer and answer != self.last_answer:
                self.last_answer = answer
                await self.api.update_element(preview.card_id, ANSWER_ELEMENT, answer, preview.next())
        except FeishuApiError as exc:
            if not streaming_closed(exc):
                raise
            self.frozen = True
            log.warning(
                "%s card streaming closed mid-turn: the preview is frozen, the answer still lands", self.label
            )

    async def settle(self, text: str) -> None:
        await self.pump.finish()
        await settle_preview(self.api, self.target, self.preview, text)


async def stream_reply(
    events: AsyncIterator[AgentEvent],
    api: FeishuApi,
    target: FeishuTarget,
    format_error: OnError,
    preview: Mounted | None,
    label: str,
) -> Mounted | None:
    """Deliver one turn; returns the preview it used. Raises :class:`TurnFailed` (the user was
    told), :class:`TurnStopped`, or :class:`FeishuApiError` when the answer could not be delivered."""
    card = _Card(api, target, preview, label)
    card.pump.touch()
    await card.deliver(events, format_error)
    return card.preview
