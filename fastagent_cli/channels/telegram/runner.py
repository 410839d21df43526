"""Running the Telegram turns the webhook accepted: one :class:`TurnRunner` per mounted channel.

A turn is a persisted intent (:data:`TurnRecord`: the session, the chat and thread to answer in,
the message to quote, the prompt, the photos and files to load), run in FIFO order per session on
the kit's lifecycle (:func:`~fastagent_cli.channels.kit.lifecycle.run_durable_turn`: the start
counted, a turn started three times dropped and its asker told, the intent kept only by an
interrupted run):

1. the ``⏳ Queued`` notice a turn got while its session was busy becomes its preview message (so
   does the message a replayed turn had started, remembered in its record); a deferred start
   deletes it;
2. the group discussion buffered since the last answer is folded in, attachments are loaded (a
   failure is a visible failed turn), and the Agent runs with the busy-wait;
3. on ``completed`` the intent is removed, then the folded discussion committed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from fastagent_cli.channels.kit.context_buffer import Fold
from fastagent_cli.channels.kit.lifecycle import DROPPED_NOTICE, QUEUED_NOTICE, run_durable_turn
from fastagent_cli.channels.kit.runner import ChannelRunner, RunnerParts, folded
from fastagent_cli.channels.kit.turn_store import TurnRecord
from fastagent_cli.channels.telegram.api import BotApi, Target, TelegramApiError
from fastagent_cli.channels.telegram.deliver import stream_reply
from fastagent_cli.channels.telegram.media import collect_buffered, resolve_attachments
from fastagent_cli.contract import AgentEvent, Failed
from fastagent_cli.errors import one_line

__all__ = ["DROPPED_NOTICE", "HTML_HINT", "QUEUED_NOTICE", "TurnRunner", "is_turn", "turn_order"]

log = logging.getLogger("fastagent.channel")

HTML_HINT = (
    "\n\n(Answer in Telegram HTML — <b> <i> <u> <s> <code> <pre> <a href> <blockquote> — not Markdown.)"
)


def is_turn(record: TurnRecord) -> bool:
    """Does a stored record have the fields (and types) a Telegram turn needs?"""
    return (
        isinstance(record.get("place"), str)
        and isinstance(record.get("text"), str)
        and isinstance(record.get("chat"), int | str)
        and (record.get("thread") is None or isinstance(record.get("thread"), int))
        and (record.get("reply_to") is None or isinstance(record.get("reply_to"), int))
        and isinstance(record.get("images"), list)
        and all(isinstance(i, str) for i in record["images"])
        and isinstance(record.get("files"), list)
        and all(isinstance(f, dict) and isinstance(f.get("id"), str) for f in record["files"])
        and (record.get("preview") is None or isinstance(record.get("preview"), int))
    )


def turn_order(record: TurnRecord) -> tuple[int, str]:
    """Arrival order: a turn's id is its ``update_id``, which Telegram increases."""
    turn_id = record["id"]
    return (int(turn_id), turn_id) if turn_id.lstrip("-").isdigit() else (0, turn_id)


def target_of(record: TurnRecord) -> Target:
    return Target(record["chat"], record.get("thread"), record.get("reply_to"))


class TurnRunner(ChannelRunner[BotApi, "int | None"]):
    def __init__(self, parts: RunnerParts[BotApi]) -> None:
        super().__init__(parts, label="[telegram]")

    async def notice(self, record: TurnRecord) -> int | None:
        try:
            return await self.api.send_message(target_of(record), QUEUED_NOTICE, html=False)
        except TelegramApiError as exc:
            log.warning("[telegram] the queue notice failed (the turn still runs): %s", exc)
            return None

    async def run(self, record: TurnRecord) -> None:
        turn_id = record["id"]
        notice = self.notices.take(turn_id)
        preview_id = await notice if notice is not None else record.get("preview")
        if notice is not None and preview_id is not None:
            self.turns.note(turn_id, preview=preview_id)

        async def defer() -> None:
            if preview_id is not None:
                with contextlib.suppress(TelegramApiError):
                    await self.api.delete_message(record["chat"], preview_id)

        async def execute() -> None:
            await stream_reply(
                self._events(record, self.buffers.peek(record["place"])),
                self.api,
                target_of(record),
                self.format_error,
                preview_id,
                on_preview=lambda message_id: self.turns.note(turn_id, preview=message_id),
            )

        where = f"chat={record['chat']}" + (f" thread={record['thread']}" if record.get("thread") else "")
        await run_durable_turn(
            self.turns,
            record,
            label="[telegram]",
            where=where,
            execute=execute,
            on_exceeded=lambda: self._tell_dropped(record, preview_id),
            on_defer=defer,
        )

    async def _events(self, record: TurnRecord, fold: Fold) -> AsyncIterator[AgentEvent]:
        buffered = collect_buffered(fold.consumed, record["images"], record["files"])
        folder = self.files / str(record["chat"])
        try:
            attachments = await resolve_attachments(
                self.api, folder, record["images"], record["files"], buffered
            )
        except (TelegramApiError, OSError) as exc:
            yield Failed(f"could not load an attachment: {one_line(str(exc), 300)}", True)
            return
        prompt = folded(record["text"], fold) + attachments.suffix + HTML_HINT
        async for event in self.answer(record, fold, prompt, attachments.images):
            yield event

    async def _tell_dropped(self, record: TurnRecord, preview_id: int | None) -> None:
        try:
            if preview_id is not None:
                await self.api.edit_message_text(record["chat"], preview_id, DROPPED_NOTICE)
            else:
                await self.api.send_message(target_of(record), DROPPED_NOTICE, html=False)
        except TelegramApiError as exc:
            log.warning(
                "[telegram] could not tell the asker a turn was dropped (session=%s): %s",
                record["session"],
                exc,
            )
