"""Durable turn intent (``turns``): accepted turns persisted before the platform is acknowledged.

Semantics (core design section 10; features K5, K6, M18):

* :meth:`TurnStore.add` persists an accepted turn before the ACK. A failed write raises
  :class:`~fastagent_cli.channels.kit.journal.StateWriteError`: the webhook answers 500 and the
  platform redelivers. Adding an id that is already pending is a no-op that keeps its attempts.
* :meth:`TurnStore.remove` drops a turn that ended: completed, or failed in any way the user was
  told about. Only an *interrupted* run (a crash, ``kill -9``, a shutdown mid-turn) leaves its
  record, and :meth:`TurnStore.recover` hands it back, in arrival order, on the next start.
* :meth:`TurnStore.start_attempt` counts executions: a turn started :data:`MAX_TURN_ATTEMPTS`
  times without finishing is ``exceeded`` (dropped; the channel tells the asker to ask again). If
  the count cannot be persisted the turn is ``defer``-red to the next start, silently: running it
  untracked would let a turn that crashes the process replay forever.

A turn accepted from a webhook request that carried a W3C ``traceparent`` (telemetry on) keeps it
in its record (``traceparent``, :mod:`~fastagent_cli.channels.kit.trace`): the turn's root span
continues the caller's trace when it runs, a replay after a restart included.

This is at-least-once: a replay re-runs the whole turn, tools included, and a crash between the
persist and the ACK can run a delivery twice.

**Several instances** (a shared store): every turn records its ``owner``, the instance that
accepted it and runs it. An ``add`` of an id another instance added first is a no-op that returns
``False`` (the first add in journal order wins), and :meth:`TurnStore.recover` hands back only this
instance's turns. A turn whose owner is no longer running (``kill -9``, a lost machine: its
database link, and with it its liveness lock, is gone) is *adopted*: an ``adopt`` operation that
only applies while the old owner still owns it, so of the instances adopting at once exactly one
gets it. :meth:`TurnStore.open` adopts what is orphaned at start; :meth:`TurnStore.watch_orphans`
keeps looking every :data:`ORPHAN_POLL_S` and hands each adopted turn to the channel to run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal

from fastagent_cli.channels.kit.journal import JournaledState, StateWriteError
from fastagent_cli.channels.kit.trace import delivery_trace
from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = ["MAX_TURN_ATTEMPTS", "ORPHAN_POLL_S", "Attempt", "TurnRecord", "TurnStore"]

log = logging.getLogger("fastagent.channel")

MAX_TURN_ATTEMPTS = 3
"""Starts without finishing after which a turn is dropped instead of run again."""

TurnRecord = dict[str, Any]
"""A persisted intent: at least ``id`` (str), ``session`` (str) and ``attempts`` (int), plus
whatever the channel's runner needs to run the turn again."""

Attempt = Literal["run", "exceeded", "defer"]
ORPHAN_POLL_S = 1.0
"""How often an instance looks for turns whose owner stopped running (a shared store)."""


def _is_base_record(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("id"), str)
        and isinstance(record.get("session"), str)
        and isinstance(record.get("attempts"), int)
        and isinstance(record.get("traceparent", ""), str)
    )


class TurnStore(JournaledState[dict[str, TurnRecord]]):
    name = "turns"

    def __init__(
        self,
        store: ChannelStateStore,
        *,
        label: str,
        is_record: Callable[[TurnRecord], bool] = lambda record: True,
        order: Callable[[TurnRecord], Any] = lambda record: record.get("seq", 0),
        max_attempts: int = MAX_TURN_ATTEMPTS,
    ) -> None:
        self._is_record = is_record
        self._order = order
        self.max_attempts = max_attempts
        self._adding: dict[str, asyncio.Future[None]] = {}
        self._watching: asyncio.Task[None] | None = None
        super().__init__(store, label=label)

    # --- the document ---------------------------------------------------------------------------

    def empty(self) -> dict[str, TurnRecord]:
        return {}

    def decode(self, data: Any) -> dict[str, TurnRecord]:
        if not isinstance(data, dict):
            raise ValueError("expected an object of turns")
        for key, record in data.items():
            self._check(record)
            if record["id"] != key:
                raise ValueError(f"turn {key!r} holds id {record['id']!r}")
        return dict(data)

    def encode(self, state: dict[str, TurnRecord]) -> Any:
        return state

    def apply(self, state: dict[str, TurnRecord], op: Mapping[str, Any]) -> None:
        kind = op.get("op")
        if kind == "add":
            record = op["turn"]
            self._check(record)
            state.setdefault(record["id"], dict(record))
        elif kind == "attempt":
            turn = state.get(str(op["id"]))
            if turn is not None:
                turn["attempts"] = int(op["attempts"])
        elif kind == "note":
            turn = state.get(str(op["id"]))
            fields = op["fields"]
            if not isinstance(fields, dict) or {"id", "session", "attempts"} & set(fields):
                raise ValueError("a note changes only channel fields")
            if turn is not None:
                turn.update(fields)
        elif kind == "remove":
            turn = state.get(str(op["id"]))
            if turn is not None and op.get("owner") in (None, turn.get("owner")):
                del state[str(op["id"])]
        elif kind == "adopt":
            turn = state.get(str(op["id"]))
            if turn is not None and turn.get("owner") == op.get("from"):
                turn["owner"] = str(op["owner"])
        else:
            raise ValueError(f"unknown operation {kind!r}")

    def _check(self, record: Any) -> None:
        if not _is_base_record(record) or not self._is_record(record):
            raise ValueError("a turn record with a missing or mistyped field")

    # --- what channels call ---------------------------------------------------------------------

    def pending(self, turn_id: str) -> bool:
        """Is this id persisted (or being persisted) and not finished?"""
        return turn_id in self.state or turn_id in self._adding

    async def add(self, record: TurnRecord) -> bool:
        """Persist an accepted turn; ``False`` when its id is already pending (nothing changes).
        Raises :class:`StateWriteError` when it cannot be persisted, and so does a second add of
        the same id made while the first was being written (a redelivery racing the original must
        not be acknowledged when the original fails)."""
        turn_id = record["id"]
        in_flight = self._adding.get(turn_id)
        if in_flight is not None:
            await asyncio.shield(in_flight)
            return False
        if turn_id in self.state:
            return False
        turn = {**record, "attempts": int(record.get("attempts", 0))}
        trace = delivery_trace()
        if trace is not None:
            turn.setdefault("traceparent", trace)
        if self.shared:
            turn["owner"] = self.store.owner
        task = asyncio.ensure_future(self.commit({"op": "add", "turn": turn}))
        self._adding[turn_id] = task
        try:
            await asyncio.shield(task)
        finally:
            if self._adding.get(turn_id) is task:
                del self._adding[turn_id]
        return self._mine(turn_id)  # with several instances, the first add in journal order wins

    def traceparent(self, turn_id: str) -> str | None:
        """The trace context the pending turn was delivered with (``None``: none, or not pending)."""
        trace = self.state.get(turn_id, {}).get("traceparent")
        return trace if isinstance(trace, str) else None

    def _mine(self, turn_id: str) -> bool:
        turn = self.state.get(turn_id)
        return turn is not None and (not self.shared or turn.get("owner") == self.store.owner)

    def recover(self) -> list[TurnRecord]:
        """Every pending turn of this instance, in arrival order (copies)."""
        return [dict(r) for r in sorted(self.state.values(), key=self._order) if self._mine(r["id"])]

    # --- turns of instances that stopped (a shared store) ---------------------------------------

    async def open(self) -> None:
        await super().open()
        if self.shared:
            adopted = await self.adopt_orphans()
            if adopted:
                log.info("%s took over %d turn(s) of stopped instances", self.label, len(adopted))

    async def adopt_orphans(self) -> list[TurnRecord]:
        """Take over the pending turns whose owner is not running; the ones this instance got, in
        arrival order. Nothing to do for a store of one process."""
        if not self.shared:
            return []
        me = self.store.owner
        owners = {r.get("owner") for r in self.state.values()} - {me}
        if not owners:
            return []
        live = await self.store.live_owners([o for o in owners if isinstance(o, str)])
        dead = owners - live
        ops = [
            {"op": "adopt", "id": r["id"], "from": r.get("owner"), "owner": me}
            for r in sorted(self.state.values(), key=self._order)
            if r.get("owner") in dead
        ]
        if not ops:
            return []
        await self.commit(*ops)
        return [dict(self.state[op["id"]]) for op in ops if self._mine(op["id"])]

    def watch_orphans(self, accept: Callable[[TurnRecord], None], every: float = ORPHAN_POLL_S) -> None:
        """Keep adopting orphaned turns and hand each one to ``accept`` (the channel's queue);
        stopped by :meth:`aclose`. Nothing to watch for a store of one process."""
        if self.shared and self._watching is None:
            self._watching = asyncio.create_task(self._watch(accept, every))

    async def _watch(self, accept: Callable[[TurnRecord], None], every: float) -> None:
        while True:
            await asyncio.sleep(every)
            if not any(not self._mine(turn_id) for turn_id in self.state):
                continue
            try:
                adopted = await self.adopt_orphans()
            except (OSError, StateWriteError) as exc:
                log.warning("%s cannot take over the turns of stopped instances yet: %s", self.label, exc)
                continue
            for record in adopted:
                log.info(
                    "%s taking over turn %s (session=%s) from a stopped instance",
                    self.label,
                    record["id"],
                    record["session"],
                )
                accept(record)

    async def aclose(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            with contextlib.suppress(BaseException):
                await self._watching
        await super().aclose()

    async def start_attempt(self, turn_id: str) -> Attempt:
        """Count one more execution of ``turn_id`` before it runs (see the module doc)."""
        record = self.state.get(turn_id)
        if record is None:
            return "run"  # not tracked (already finished): nothing to count
        attempts = int(record["attempts"]) + 1
        if attempts > self.max_attempts:
            log.error(
                "%s dropping turn %s after starting it %d time(s) without finishing (session=%s): it may "
                "crash the process, or was interrupted each time; telling the asker",
                self.label,
                turn_id,
                record["attempts"],
                record["session"],
            )
            await self.remove(turn_id)
            return "exceeded"
        try:
            await self.commit({"op": "attempt", "id": turn_id, "attempts": attempts}, sync=False)
        except StateWriteError as exc:
            log.error(
                "%s cannot count a start of turn %s, so it waits for the next start instead of running "
                "untracked (session=%s): %s",
                self.label,
                turn_id,
                record["session"],
                exc,
            )
            return "defer"
        return "run"

    async def park(self, turn_id: str) -> None:
        """The turn waits for an approval: mark it ``awaiting`` (a restart follows the session
        instead of replaying it, :mod:`~fastagent_cli.channels.kit.resume`) and count its starts
        from zero (reaching the wait shows it does not crash the process; a server restarted
        while a person takes a day to answer must not drop it). Written whole before it returns:
        the request is posted after it."""
        record = self.state.get(turn_id)
        if record is None or (record.get("awaiting") and not record["attempts"]):
            return
        try:
            await self.commit(
                {"op": "attempt", "id": turn_id, "attempts": 0},
                {"op": "note", "id": turn_id, "fields": {"awaiting": True}},
                sync=False,
            )
        except StateWriteError as exc:
            log.warning("%s %s (a restart replays turn %s instead of waiting)", self.label, exc, turn_id)

    def note(self, turn_id: str, **fields: Any) -> None:
        """Record more about a pending turn (the message its preview lives in...), in the
        background: losing it costs only what it would have saved."""
        if turn_id in self.state:
            self.remember({"op": "note", "id": turn_id, "fields": fields})

    async def remove(self, turn_id: str) -> None:
        """Drop a finished turn. A failed write is logged (a restart may replay an answered turn)."""
        if turn_id not in self.state:
            return
        op: dict[str, Any] = {"op": "remove", "id": turn_id}
        if self.shared:
            op["owner"] = self.store.owner  # a turn another instance took over stays its
        try:
            await self.commit(op, sync=False)
        except StateWriteError as exc:
            log.error("%s %s (a restart may replay turn %s)", self.label, exc, turn_id)
