"""One channel state document held in memory and kept durable through a journal of operations.

A store (turn intents, the seen ring, context buffers, thread participants) subclasses
:class:`JournaledState` and says four things: the empty state, how to read and write a snapshot, and
how one operation changes the state. Then:

* :meth:`~JournaledState.commit` makes operations durable *first* and applies them to memory only
  once the journal append succeeded, so memory never runs ahead of disk (a failed write changes
  nothing: the caller answers 500 and the platform redelivers);
* :meth:`~JournaledState.remember` applies at once and persists in the background (for caches whose
  loss costs little: the seen ring, participation);
* concurrent operations are group-committed: while one append is in flight the next ones queue, and
  the following append carries them all;
* every :data:`COMPACT_EVERY` operations the state is rewritten as a snapshot and the journal
  emptied.

Opening reads snapshot and journal; a corrupt file, a wrong-shaped snapshot or a malformed
operation is a warning naming the file and the state starts empty (or without that operation),
never a crash. An unreadable file (permissions) raises :class:`OSError`: a mount error to fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = ["COMPACT_EVERY", "JournaledState", "StateWriteError"]

log = logging.getLogger("fastagent.channel")

S = TypeVar("S")
COMPACT_EVERY = 256
"""Journal operations after which the state is rewritten as one snapshot."""


class StateWriteError(Exception):
    """An operation could not be made durable (its state is unchanged)."""


class _Batch:
    __slots__ = ("applied", "done", "ops")

    def __init__(self, ops: list[dict[str, Any]], applied: bool, done: asyncio.Future[None] | None) -> None:
        self.ops = ops
        self.applied = applied
        self.done = done


class JournaledState(Generic[S]):
    """Base of the channel stores: subclasses implement :meth:`empty`, :meth:`decode`,
    :meth:`encode` and :meth:`apply`."""

    name: str = "state"

    def __init__(self, store: ChannelStateStore, *, label: str, compact_every: int = COMPACT_EVERY) -> None:
        self.store = store
        self.label = label
        self.compact_every = compact_every
        self.state: S = self.empty()
        self._queue: list[_Batch] = []
        self._writer: asyncio.Task[None] | None = None
        self._since_snapshot = 0

    # --- what a store defines -------------------------------------------------------------------

    def empty(self) -> S:
        raise NotImplementedError

    def decode(self, data: Any) -> S:
        """The state from a snapshot's data; :class:`ValueError` when it has the wrong shape."""
        raise NotImplementedError

    def encode(self, state: S) -> Any:
        raise NotImplementedError

    def apply(self, state: S, op: Mapping[str, Any]) -> None:
        """Change ``state`` by one operation; :class:`ValueError` when the operation is malformed.
        Must be deterministic: replaying the journal rebuilds the same state."""
        raise NotImplementedError

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return self.store.describe(self.name)

    async def open(self) -> None:
        """Load the snapshot and replay the journal; rewrite them as one clean snapshot when the
        journal was not empty or something had to be skipped."""
        loaded = await self.store.load(self.name)
        problems = list(loaded.problems)
        state = self.empty()
        if loaded.snapshot is not None:
            try:
                state = self.decode(loaded.snapshot)
            except (ValueError, TypeError, KeyError) as exc:
                problems.append(f"{self.where} has an unexpected shape ({exc})")
                state = self.empty()
        for op in loaded.journal:
            try:
                if not isinstance(op, Mapping):
                    raise ValueError("not an object")
                self.apply(state, op)
            except (ValueError, TypeError, KeyError) as exc:
                problems.append(f"skipped a malformed journal entry of {self.where} ({exc})")
        for problem in problems:
            log.warning("%s %s — starting without what it held", self.label, problem)
        self.state = state
        if loaded.journal or problems:
            await self.store.replace(self.name, self.encode(self.state))

    async def aclose(self) -> None:
        """Wait for queued writes to land."""
        writer = self._writer
        if writer is not None and not writer.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(writer)

    # --- changing the state ---------------------------------------------------------------------

    async def commit(self, *ops: dict[str, Any]) -> None:
        """Persist ``ops``, then apply them. Raises :class:`StateWriteError` (nothing applied)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._enqueue(_Batch(list(ops), False, done))
        await done

    def remember(self, *ops: dict[str, Any]) -> None:
        """Apply ``ops`` now and persist them in the background (a failed write is a warning)."""
        for op in ops:
            self.apply(self.state, op)
        self._enqueue(_Batch(list(ops), True, None))

    def _enqueue(self, batch: _Batch) -> None:
        self._queue.append(batch)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())

    async def _write(self) -> None:
        while self._queue:
            batches, self._queue = self._queue, []
            ops = [op for batch in batches for op in batch.ops]
            try:
                await self.store.append(self.name, ops)
            except OSError as exc:
                error = StateWriteError(f"cannot write {self.where}: {exc.strerror or exc}")
                for batch in batches:
                    if batch.done is None:
                        log.warning("%s %s", self.label, error)
                    elif not batch.done.done():
                        batch.done.set_exception(error)
                continue
            for batch in batches:
                problem = None if batch.applied else self._apply_all(batch.ops)
                if batch.done is not None and not batch.done.done():
                    if problem is None:
                        batch.done.set_result(None)
                    else:
                        batch.done.set_exception(problem)
            self._since_snapshot += len(ops)
            if self._since_snapshot >= self.compact_every:
                await self._compact()

    def _apply_all(self, ops: list[dict[str, Any]]) -> StateWriteError | None:
        for op in ops:
            try:
                self.apply(self.state, op)
            except (ValueError, TypeError, KeyError) as exc:  # a store bug: say so, keep the writer alive
                log.error("%s cannot apply %s to %s: %s", self.label, op.get("op"), self.where, exc)
                return StateWriteError(f"cannot apply {op.get('op')} to {self.where}: {exc}")
        return None

    async def _compact(self) -> None:
        try:
            await self.store.replace(self.name, self.encode(self.state))
        except OSError as exc:
            log.warning("%s cannot compact %s (the journal keeps growing): %s", self.label, self.where, exc)
            return
        self._since_snapshot = 0
