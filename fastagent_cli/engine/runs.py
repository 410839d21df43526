"""Runs in flight: what steer, follow_up and abort reach, and what ``state()`` reports.

A run is a turn plus its continuations. It keeps two queues: steering (delivered after the current
tool batch, before the next model call) and follow-ups (FIFO, delivered when the run would
otherwise stop). Both are taken one prompt at a time, as pi does, except *coalescing* input
(notices, streamed lines: asyncai's rule): a run of consecutive coalescing follow-ups is taken
whole, so N of them arriving during a run cause exactly one more turn. Once the run finds both queues
empty at its end it stops *accepting*: from then on a steer or follow-up is refused
``run_command_failed`` (the race window), because it could no longer be delivered. An abort is
accepted until the run's work is over; it cancels that work, so the run settles ``aborted``
(or ``completed``, when the work finished in the same instant: acceptance is not outcome).

Manual compactions are registered here too (the session reads ``compacting``; ``abort`` stops
them). Everything runs on the event loop: no locks.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from fastagent_cli.contract import Failed, Prompt
from fastagent_cli.control import (
    NO_ACTIVE_RUN,
    RUN_COMMAND_FAILED,
    ActionResult,
    InputItem,
    PendingPrompts,
    SessionEvent,
    accepted,
    rejected,
)

__all__ = ["Queued", "Run", "RunRegistry"]

Publish = Callable[[SessionEvent], None]


@dataclass(frozen=True, slots=True)
class Queued:
    """A follow-up waiting for the run's end; ``coalesce``: taken together with its neighbours."""

    item: InputItem
    coalesce: bool = False


@dataclass(slots=True)
class Run:
    session: str
    publish: Publish
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    steering: deque[Prompt] = field(default_factory=deque)
    follow_ups: deque[Queued] = field(default_factory=deque)
    accepting: bool = True
    abort_requested: bool = False
    work: asyncio.Task[object] | None = None
    ended_by: Failed | None = None
    """The terminal of a run the server ended (a dev reload's drain ran out), not the caller."""

    def event(self, kind: str, **data: object) -> SessionEvent:
        return SessionEvent(kind, data, self.run_id)

    def pending(self) -> PendingPrompts:
        return PendingPrompts(
            tuple(p.text for p in self.steering), tuple(q.item.text for q in self.follow_ups)
        )

    def _queue_changed(self) -> None:
        pending = self.pending()
        self.publish(self.event("queue_changed", **pending.to_json()))

    # --- actions (from any caller) --------------------------------------------------------------

    def enqueue(self, kind: Literal["steer", "follow_up"], prompt: Prompt) -> ActionResult:
        if not self.accepting:
            return rejected(
                RUN_COMMAND_FAILED,
                f"the run settled before the {kind.replace('_', '-')} could join it; "
                "check state() and invoke again",
            )
        if kind == "steer":
            self.steering.append(prompt)
        else:
            self.follow_ups.append(Queued(prompt))
        self._queue_changed()
        return accepted(self.run_id)

    def enqueue_input(self, item: InputItem) -> ActionResult:
        """A coalescing follow-up (a notice, a streamed line): delivered at the run's end together
        with the other coalescing input that arrived meanwhile, as one more turn."""
        if not self.accepting:
            return rejected(RUN_COMMAND_FAILED, "the run settled before the input could join it")
        self.follow_ups.append(Queued(item, coalesce=True))
        self._queue_changed()
        return accepted(self.run_id)

    def abort(self) -> ActionResult:
        work = self.work
        if work is None or work.done():
            return rejected(RUN_COMMAND_FAILED, "the run settled before the abort reached it")
        self.abort_requested = True
        self.accepting = False
        work.cancel()
        return accepted(self.run_id)

    def end_with(self, terminal: Failed) -> None:
        """End the run with ``terminal`` (its work is cancelled; it settles ``failed``)."""
        work = self.work
        if work is None or work.done():
            return
        self.ended_by = terminal
        self.accepting = False
        work.cancel()

    def drop_queues(self) -> SessionEvent | None:
        """Empty the queues of a run that ended without taking them (aborted, failed): the
        ``queue_changed`` reporting it, ``None`` when they were empty."""
        if not self.steering and not self.follow_ups:
            return None
        self.steering.clear()
        self.follow_ups.clear()
        return self.event("queue_changed", **self.pending().to_json())

    # --- the run's side -------------------------------------------------------------------------

    def take_steering(self) -> Prompt | None:
        if not self.steering:
            return None
        prompt = self.steering.popleft()
        self._queue_changed()
        return prompt

    def take_continuation(self) -> list[InputItem]:
        """At the run's end: the next steering prompt, else the next follow-up (with every
        coalescing follow-up right behind a coalescing one); ``[]`` with both queues empty, and
        the run stops accepting (atomically: nothing runs between the check and the flag)."""
        if self.steering:
            prompt = self.take_steering()
            return [prompt] if prompt is not None else []
        if self.follow_ups:
            head = self.follow_ups.popleft()
            taken: list[InputItem] = [head.item]
            while head.coalesce and self.follow_ups and self.follow_ups[0].coalesce:
                taken.append(self.follow_ups.popleft().item)
            self._queue_changed()
            return taken
        self.accepting = False
        return []


class RunRegistry:
    """The runs and manual compactions of one engine, by session."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}
        self._compactions: dict[str, asyncio.Task[None]] = {}

    def begin(self, session: str, publish: Publish) -> Run:
        run = Run(session, publish)
        self._runs[session] = run
        return run

    def end(self, run: Run) -> None:
        run.accepting = False
        if self._runs.get(run.session) is run:
            del self._runs[run.session]

    def active(self, session: str) -> Run | None:
        return self._runs.get(session)

    def busy(self) -> bool:
        """Whether any run or manual compaction is in flight."""
        return bool(self._runs) or bool(self._compactions)

    def end_all(self, terminal: Failed) -> int:
        """End every run in flight with ``terminal`` and stop every manual compaction; how many
        runs were ended."""
        runs = list(self._runs.values())
        for run in runs:
            run.end_with(terminal)
        self.stop_compactions()
        return len(runs)

    def status(self, session: str) -> Literal["idle", "running", "compacting"]:
        if session in self._runs:
            return "running"
        return "compacting" if session in self._compactions else "idle"

    def compacting(self, session: str, task: asyncio.Task[None]) -> None:
        """``task`` compacts ``session``; an abort cancels it."""
        self._compactions[session] = task

    def compacted(self, session: str) -> None:
        self._compactions.pop(session, None)

    def stop_compactions(self) -> list[asyncio.Task[None]]:
        """Abort every manual compaction (the engine is closing); the tasks to wait for."""
        tasks = list(self._compactions.values())
        for task in tasks:
            task.cancel()
        return tasks

    # --- actions --------------------------------------------------------------------------------

    def enqueue(self, session: str, kind: Literal["steer", "follow_up"], prompt: Prompt) -> ActionResult:
        run = self._runs.get(session)
        if run is None:
            return _no_run(kind)
        return run.enqueue(kind, prompt)

    def abort(self, session: str) -> ActionResult:
        run = self._runs.get(session)
        if run is not None:
            return run.abort()
        compaction = self._compactions.get(session)
        if compaction is not None:
            compaction.cancel()
            return accepted()  # the outcome arrives as compaction_finished{aborted: true}
        return _no_run("abort")


def _no_run(kind: str) -> ActionResult:
    return rejected(
        NO_ACTIVE_RUN,
        f"no active run for this session: {kind.replace('_', '-')} modulates a run an invoke is driving",
    )
