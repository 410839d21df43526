"""The live preview of a Telegram turn, and its final write (feature M9).

One real message: ``💭 Thinking…`` is sent at once (or the turn's ``⏳ Queued`` notice is taken
over), then edited in place at most every :data:`EDIT_THROTTLE_S` with the reasoning tail, one line
per tool call and, once it is :data:`EDIT_THROTTLE_S` old, the partial answer, as plain text (a
partial answer may hold unbalanced HTML). On ``completed`` the same message becomes the answer, in
HTML with a plain-text fallback, or ``(no reply)`` when it is empty; an answer longer than one
message is sent as fresh messages after the placeholder is deleted, so its parts stay together.
On ``failed`` the user reads ``on_error``'s text (nothing if it returns ``""``: the placeholder is
deleted) and the details go to the log; a turn aborted by a stop command keeps the partial answer
(or deletes the placeholder when there was none). The answer follows the last preview edit by at least
:data:`FINAL_MIN_GAP_S` (a quick answer replaces the placeholder at once), so a preview message is
never edited faster than about once a second.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable

from fastagent_cli.channels.kit.invoke import OnError
from fastagent_cli.channels.kit.preview import THINKING_PLACEHOLDER, progress, revealed_answer, thinking_line
from fastagent_cli.channels.kit.reply import NO_REPLY, LiveReply
from fastagent_cli.channels.telegram.api import BotApi, Target, TelegramApiError
from fastagent_cli.channels.telegram.html import MAX_MESSAGE, telegram_html, utf16_len
from fastagent_cli.contract import AgentEvent

__all__ = [
    "EDIT_THROTTLE_S",
    "FINAL_MIN_GAP_S",
    "NO_REPLY",
    "stream_reply",
]

log = logging.getLogger("fastagent.channel")

EDIT_THROTTLE_S = 1.5
FINAL_MIN_GAP_S = 1.2
THINKING_TAIL = 280


class _Reply(LiveReply[BotApi, Target]):
    def __init__(
        self, api: BotApi, target: Target, preview_id: int | None, on_preview: Callable[[int], None] | None
    ) -> None:
        super().__init__(api, target, throttle_s=EDIT_THROTTLE_S, label="[telegram]")
        self.on_preview = on_preview
        self.message_id = preview_id
        self.sent_placeholder = preview_id is not None
        self.last_text = ""
        self.last_edit = float("-inf")
        """When the last preview edit started: the answer never follows one closer than the gap."""

    def render(self) -> str:
        answer = revealed_answer(self.view, EDIT_THROTTLE_S)
        if len(answer) > MAX_MESSAGE - 200:
            answer = "…" + answer[-(MAX_MESSAGE - 200) :]
        text = progress(self.view, thinking_line(self.view, THINKING_TAIL), answer)
        return (text or THINKING_PLACEHOLDER)[:MAX_MESSAGE]

    async def flush(self) -> None:
        text = self.render()
        if text == self.last_text:
            return
        self.last_text = text
        if self.message_id is not None:
            self.last_edit = time.monotonic()
            await self.api.edit_message_text(self.target.chat_id, self.message_id, text)
            return
        if self.sent_placeholder:
            return  # sent once without getting an id back: never send a second placeholder
        self.sent_placeholder = True
        self.message_id = await self.api.send_message(self.target, text, html=False)
        if self.message_id is None:
            raise self.api.error(
                "sendMessage", 200, "the answer had no message_id: no live preview for this turn"
            )
        if self.on_preview is not None:
            self.on_preview(self.message_id)

    async def settle(self, text: str, *, html: bool = True) -> None:
        """Turn the preview into ``text`` (see the module doc); an empty ``text`` deletes it."""
        await self.pump.finish()
        if not text.strip():
            if self.message_id is not None:
                await self._delete_preview()
            return
        if self.message_id is not None:
            size = utf16_len(telegram_html(text) if html else text)
            if size <= MAX_MESSAGE:
                await self._spaced()
                try:
                    await self.api.edit_message_text(self.target.chat_id, self.message_id, text, html=html)
                    return
                except TelegramApiError as exc:
                    log.warning(
                        "[telegram] could not edit the preview into the answer (%s); sending it anew", exc
                    )
            await self._delete_preview()
        await self.api.send_message(self.target, text, html=html)

    async def _spaced(self) -> None:
        wait = self.last_edit + FINAL_MIN_GAP_S - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    async def _delete_preview(self) -> None:
        if self.message_id is None:
            return
        try:
            await self.api.delete_message(self.target.chat_id, self.message_id)
        except TelegramApiError as exc:
            log.warning("[telegram] could not delete the preview message: %s", exc)
        self.message_id = None


async def stream_reply(
    events: AsyncIterator[AgentEvent],
    api: BotApi,
    target: Target,
    format_error: OnError,
    preview_id: int | None = None,
    on_preview: Callable[[int], None] | None = None,
) -> None:
    """Deliver one turn into the chat. ``preview_id``: a message to take over as the preview;
    ``on_preview(id)`` is told the id of a placeholder sent. Returns when the answer is delivered;
    raises :class:`TurnFailed` for a failed turn, :class:`TelegramApiError` when the answer
    could not be delivered. Cancelled (the process is stopping), it writes nothing more."""
    reply = _Reply(api, target, preview_id, on_preview)
    reply.pump.touch()  # the placeholder, at once
    await reply.deliver(events, format_error)
