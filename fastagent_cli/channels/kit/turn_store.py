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

This is at-least-once: a replay re-runs the whole turn, tools included, and a crash between the
persist and the ACK can run a delivery twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal

from fastagent_cli.channels.kit.journal import JournaledState, StateWriteError
from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = ["MAX_TURN_ATTEMPTS", "Attempt", "TurnRecord", "TurnStore"]

log = logging.getLogger("fastagent.channel")

MAX_TURN_ATTEMPTS = 3
"""Starts without finishing after which a turn is dropped instead of run again."""

TurnRecord = dict[str, Any]
"""A persisted intent: at least ``id`` (str), ``session`` (str) and ``attempts`` (int), plus
whatever the channel's runner needs to run the turn again."""

Attempt = Literal["run", "exceeded", "defer"]


def _is_base_record(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("id"), str)
        and isinstance(record.get("session"), str)
        and isinstance(record.get("attempts"), int)
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
            state.pop(str(op["id"]), None)
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
        task = asyncio.ensure_future(self.commit({"op": "add", "turn": turn}))
        self._adding[turn_id] = task
        try:
            await asyncio.shield(task)
        finally:
            if self._adding.get(turn_id) is task:
                del self._adding[turn_id]
        return True

    def recover(self) -> list[TurnRecord]:
        """Every pending turn, in arrival order (copies)."""
        return [dict(record) for record in sorted(self.state.values(), key=self._order)]

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

    def note(self, turn_id: str, **fields: Any) -> None:
        """Record more about a pending turn (the message its preview lives in...), in the
        background: losing it costs only what it would have saved."""
        if turn_id in self.state:
            self.remember({"op": "note", "id": turn_id, "fields": fields})

    async def remove(self, turn_id: str) -> None:
        """Drop a finished turn. A failed write is logged (a restart may replay an answered turn)."""
        if turn_id not in self.state:
            return
        try:
            await self.commit({"op": "remove", "id": turn_id}, sync=False)
        except StateWriteError as exc:
            log.error("%s %s (a restart may replay turn %s)", self.label, exc, turn_id)
