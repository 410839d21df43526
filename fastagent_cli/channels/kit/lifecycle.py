"""The lifecycle of one durable channel turn, shared by the Telegram, Slack and Feishu/Lark runners.

A turn is a persisted intent (:class:`~fastagent_cli.channels.kit.turn_store.TurnStore`). Run, in
its session's FIFO order:

1. the start is counted: a turn started :data:`~fastagent_cli.channels.kit.turn_store.
   MAX_TURN_ATTEMPTS` times without finishing is dropped (``on_exceeded`` tells the asker to ask
   again); when the count cannot be persisted the turn waits for the next start (``on_defer``);
2. ``execute()`` runs and delivers it: a :class:`TurnFailed` (the user was told), a platform API
   error (:class:`~fastagent_cli.errors.ChannelApiError`, on one line) or any other error (with its
   traceback) is logged as ``turn failed``; a :class:`TurnStopped` (a stop command) as
   ``turn stopped``;
3. the intent is removed in every case but one: an *interrupted* run (the process stopping
   mid-turn) keeps it, so the next start replays it.

While a turn waits behind another of its session, its runner posts :data:`QUEUED_NOTICE` in a
task that :class:`QueuedNotices` holds until the turn runs (or the channel closes). A runner
whose notice can be edited into other text takes ``on_exceeded`` and ``on_defer`` from
:class:`SettledNotice`.

The turn's root span (``<channel> turn``) continues the trace the delivery came with (the
record's ``traceparent``, :mod:`~fastagent_cli.channels.kit.trace`), else starts a new one.

Logs: ``<label> turn start: turn=… session=… <where>``, ``turn done … (Nms)``, ``turn failed …``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastagent_cli import telemetry
from fastagent_cli.channels.kit.turn_store import TurnRecord, TurnStore
from fastagent_cli.channels.kit.work import cancel_all
from fastagent_cli.errors import ChannelApiError, one_line

__all__ = [
    "DEFERRED_NOTICE",
    "DROPPED_NOTICE",
    "QUEUED_NOTICE",
    "QueuedNotices",
    "SettledNotice",
    "TurnFailed",
    "TurnStopped",
    "run_durable_turn",
]

log = logging.getLogger("fastagent.channel")

QUEUED_NOTICE = "⏳ Queued — I’ll start once the current task finishes."
DEFERRED_NOTICE = "⏳ Delayed by a temporary system issue — I’ll retry automatically."
DROPPED_NOTICE = "⚠️ I couldn’t complete an earlier request — please ask again."

T = TypeVar("T")


class QueuedNotices(Generic[T]):
    """The in-flight "queued" notices of a runner, by turn id."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[T]] = {}

    def post(self, turn_id: str, notice: Coroutine[Any, Any, T]) -> None:
        if turn_id not in self._tasks:
            telemetry.metrics.add("fastagent.channel.queued_turns", 1)
        self._tasks[turn_id] = asyncio.create_task(notice)

    def take(self, turn_id: str) -> asyncio.Task[T] | None:
        """The turn's notice task (to await before the turn runs), or ``None`` when none was posted."""
        task = self._tasks.pop(turn_id, None)
        if task is not None:
            telemetry.metrics.add("fastagent.channel.queued_turns", -1)
        return task

    async def aclose(self) -> None:
        telemetry.metrics.add("fastagent.channel.queued_turns", -len(self._tasks))
        await cancel_all(self._tasks.values())


class TurnFailed(Exception):
    """The turn ended ``failed`` (the user has been told; the message carries the details)."""


class TurnStopped(Exception):
    """The turn was aborted by a stop command."""


@dataclass(frozen=True, slots=True)
class SettledNotice:
    """``on_exceeded`` / ``on_defer`` for a runner where ``settle(text)`` turns the asker's queue
    notice into ``text`` (or posts ``text`` when there is none): a dropped turn settles into
    :data:`DROPPED_NOTICE`, a deferred start into :data:`DEFERRED_NOTICE` when there is a notice
    (``noticed``). A platform error is logged (dropped) or ignored (deferred), never raised."""

    settle: Callable[[str], Awaitable[None]]
    noticed: bool
    label: str

    async def exceeded(self) -> None:
        try:
            await self.settle(DROPPED_NOTICE)
        except ChannelApiError as exc:
            log.warning("%s could not tell the asker a turn was dropped: %s", self.label, exc)

    async def defer(self) -> None:
        if self.noticed:
            with contextlib.suppress(ChannelApiError):
                await self.settle(DEFERRED_NOTICE)


async def run_durable_turn(
    turns: TurnStore,
    record: TurnRecord,
    *,
    label: str,
    where: str,
    execute: Callable[[], Awaitable[None]],
    on_exceeded: Callable[[], Awaitable[None]],
    on_defer: Callable[[], Awaitable[None]],
) -> None:
    turn_id, session = record["id"], record["session"]
    decision = await turns.start_attempt(turn_id)
    if decision == "exceeded":
        await on_exceeded()
        return
    if decision == "defer":
        await on_defer()
        return
    log.info("%s turn start: turn=%s session=%s %s", label, turn_id, session, where)
    started = time.monotonic()
    interrupted = False
    try:
        channel = label.strip("[] ") or "channel"
        with telemetry.root_span(
            f"{channel} turn",
            trigger="channel",
            traceparent=record.get("traceparent") or turns.traceparent(turn_id),
            kind=telemetry.CONSUMER,
            attributes={"fastagent.channel": channel, "gen_ai.conversation.id": session},
        ):
            await execute()
        log.info("%s turn done: turn=%s session=%s (%dms)", label, turn_id, session, _ms(started))
    except asyncio.CancelledError:
        interrupted = True
        log.warning(
            "%s turn interrupted: turn=%s session=%s (it replays on the next start)", label, turn_id, session
        )
        raise
    except TurnStopped:
        log.info("%s turn stopped: turn=%s session=%s (%dms)", label, turn_id, session, _ms(started))
    except (TurnFailed, ChannelApiError) as exc:
        log.error("%s turn failed: turn=%s session=%s (%dms): %s", label, turn_id, session, _ms(started), exc)
    except Exception as exc:
        log.exception(
            "%s turn failed: turn=%s session=%s: %s",
            label,
            turn_id,
            session,
            one_line(f"{type(exc).__name__}: {exc}", 500),
        )
    finally:
        if not interrupted:
            await turns.remove(turn_id)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
