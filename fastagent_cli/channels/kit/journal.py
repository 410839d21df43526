"""One channel state document held in memory and kept durable through a journal of operations.

A store (turn intents, the seen ring, context buffers, thread participants) subclasses
:class:`JournaledState` and says four things: the empty state, how to read and write a snapshot, and
how one operation changes the state. Then:

* :meth:`~JournaledState.commit` makes operations durable *first* and applies them to memory only
  once the journal append succeeded, so memory never runs ahead of disk (a failed write changes
  nothing: the caller answers 500 and the platform redelivers). What gates an acknowledgement is
  flushed to stable storage (fsync, ``sync=True``); bookkeeping after it (``sync=False``) is
  written whole but not flushed: it survives the process dying, not the machine;
* :meth:`~JournaledState.remember` applies at once and persists in the background (for caches whose
  loss costs little: the seen ring, participation);
* concurrent operations are group-committed: while one append is in flight the next ones queue, and
  the following append carries them all;
* after :data:`COMPACT_EVERY` operations, once writes pause for :data:`IDLE_S` (or at ten times
  that many, pause or not), the state is rewritten as a snapshot and the journal emptied.

Opening reads snapshot and journal; a corrupt file, a wrong-shaped snapshot or a malformed
operation is a warning naming the file and the state starts empty (or without that operation),
never a crash. An unreadable file (permissions) raises :class:`OSError`: a mount error to fix.

**A shared store** (the database backend, several instances): every instance's operations land in
one journal with gap-free positions, and every instance applies all of them *in position order*
(its own included, once its append returned), so they all hold the same state: a commit resolves
once the state has caught up to it, and an append by another instance is applied when its
notification arrives. Operations applied at once by :meth:`~JournaledState.remember` are applied
again when read back in order, so they must be idempotent (adding an id to a set, merging a
record). Compaction stores the snapshot as of the position it reflects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from fastagent_cli.state.channel_state import ChannelStateStore, LoadedDocument

__all__ = ["COMPACT_EVERY", "IDLE_S", "JournaledState", "StateWriteError"]

log = logging.getLogger("fastagent.channel")

S = TypeVar("S")
COMPACT_EVERY = 1000
"""Journal operations after which the state is rewritten as one snapshot (once writes pause)."""
IDLE_S = 1.0
"""How long writes must pause before a due compaction runs."""


class StateWriteError(Exception):
    """An operation could not be made durable (its state is unchanged)."""


class _Batch:
    __slots__ = ("applied", "done", "ops", "sync")

    def __init__(
        self, ops: list[dict[str, Any]], applied: bool, done: asyncio.Future[None] | None, sync: bool
    ) -> None:
        self.ops = ops
        self.applied = applied
        self.done = done
        self.sync = sync


class JournaledState(ABC, Generic[S]):
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
        self._last_op = 0.0
        self._idle: asyncio.Task[None] | None = None
        self._position = 0
        """A shared store: the journal position the state reflects."""
        self._stale = False
        self._applying = asyncio.Lock()
        self._following: asyncio.Task[None] | None = None

    @property
    def shared(self) -> bool:
        """Do other instances write this document too (a shared store)?"""
        return self.store.owner is not None

    # --- what a store defines -------------------------------------------------------------------

    @abstractmethod
    def empty(self) -> S:
        """The state before any operation."""

    @abstractmethod
    def decode(self, data: Any) -> S:
        """The state from a snapshot's data; :class:`ValueError` when it has the wrong shape."""

    @abstractmethod
    def encode(self, state: S) -> Any:
        """The snapshot's data for ``state`` (what :meth:`decode` reads back)."""

    @abstractmethod
    def apply(self, state: S, op: Mapping[str, Any]) -> None:
        """Change ``state`` by one operation; :class:`ValueError` when the operation is malformed.
        Must be deterministic: replaying the journal rebuilds the same state."""

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return self.store.describe(self.name)

    async def open(self) -> None:
        """Load the snapshot and replay the journal; rewrite them as one clean snapshot when the
        journal was not empty or something had to be skipped. A shared store: start following
        the other instances' appends."""
        loaded = await self.store.load(self.name)
        problems = self._rebuild(loaded)
        if self.shared:
            await self.store.watch(self.name, self._heard)
        if loaded.journal or problems:
            await self.store.replace(self.name, self.encode(self.state), position=self._position)

    def _rebuild(self, loaded: LoadedDocument) -> list[str]:
        """The state from a whole document (what went wrong is warned about and returned)."""
        problems = list(loaded.problems)
        state = self.empty()
        if loaded.snapshot is not None:
            try:
                state = self.decode(loaded.snapshot)
            except (ValueError, TypeError, KeyError) as exc:
                problems.append(f"{self.where} has an unexpected shape ({exc})")
                state = self.empty()
        for op in loaded.journal:
            problem = self._replay(state, op)
            if problem is not None:
                problems.append(problem)
        for problem in problems:
            log.warning("%s %s — starting without what it held", self.label, problem)
        self.state = state
        self._position = loaded.position
        return problems

    def _replay(self, state: S, op: Any) -> str | None:
        try:
            if not isinstance(op, Mapping):
                raise ValueError("not an object")
            self.apply(state, op)
        except (ValueError, TypeError, KeyError) as exc:
            return f"skipped a malformed journal entry of {self.where} ({exc})"
        return None

    # --- a shared store: following every instance's appends --------------------------------------

    async def _follow(self) -> None:
        """Apply what was appended since :attr:`_position`, by any instance, in position order."""
        async with self._applying:
            if self._stale:
                loaded = await self.store.load(self.name)
            else:
                loaded = await self.store.changes(self.name, self._position)
            if loaded.reset:
                self._rebuild(loaded)
            else:
                for op in loaded.journal:
                    problem = self._replay(self.state, op)
                    if problem is not None:
                        log.warning("%s %s", self.label, problem)
                self._position = max(self._position, loaded.position)
            self._stale = False

    def _heard(self, position: int | None) -> None:
        if position is not None and position <= self._position:
            return
        if self._following is None or self._following.done():
            self._following = asyncio.create_task(self._follow_quietly())

    async def _follow_quietly(self) -> None:
        try:
            await self._follow()
        except OSError as exc:
            self._stale = True
            log.warning("%s cannot read %s from the other instances yet: %s", self.label, self.where, exc)

    async def aclose(self) -> None:
        """Wait for queued writes to land, and compact when it is due."""
        writer = self._writer
        if writer is not None and not writer.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(writer)
        for task in (self._idle, self._following):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._since_snapshot >= self.compact_every:
            await self._compact()

    # --- changing the state ---------------------------------------------------------------------

    async def commit(self, *ops: dict[str, Any], sync: bool = True) -> None:
        """Persist ``ops``, then apply them. Raises :class:`StateWriteError` (nothing applied)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._enqueue(_Batch(list(ops), False, done, sync))
        await done

    def remember(self, *ops: dict[str, Any]) -> None:
        """Apply ``ops`` now and write them in the background (a failed write is a warning)."""
        for op in ops:
            self.apply(self.state, op)
        self._enqueue(_Batch(list(ops), True, None, False))

    def _enqueue(self, batch: _Batch) -> None:
        self._queue.append(batch)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())

    async def _write(self) -> None:
        while self._queue:
            batches, self._queue = self._queue, []
            ops = [op for batch in batches for op in batch.ops]
            try:
                position = await self.store.append(self.name, ops, sync=any(batch.sync for batch in batches))
            except OSError as exc:
                error = StateWriteError(f"cannot write {self.where}: {exc.strerror or exc}")
                for batch in batches:
                    if batch.done is None:
                        log.warning("%s %s", self.label, error)
                    elif not batch.done.done():
                        batch.done.set_exception(error)
                continue
            if position is not None:
                await self._caught_up(batches)
            for batch in batches:
                problem = None if batch.applied else self._apply_all(batch.ops)
                if batch.done is not None and not batch.done.done():
                    if problem is None:
                        batch.done.set_result(None)
                    else:
                        batch.done.set_exception(problem)
            self._since_snapshot += len(ops)
            self._last_op = time.monotonic()
            if self._since_snapshot >= 10 * self.compact_every:
                await self._compact()  # a stream that never pauses: compact now, bounded
            elif self._since_snapshot >= self.compact_every and self._idle is None:
                self._idle = asyncio.create_task(self._compact_when_idle())

    async def _caught_up(self, batches: list[_Batch]) -> None:
        """A shared store: the appends are durable; apply everything up to them in order. When
        the journal cannot be read back, apply them now and read the whole document next time."""
        try:
            await self._follow()
        except OSError as exc:
            log.warning("%s cannot read %s back (applying its own writes): %s", self.label, self.where, exc)
            self._stale = True
            for batch in batches:
                if not batch.applied:
                    self._apply_all(batch.ops)
        for batch in batches:
            batch.applied = True  # what _write applies next is already in the state

    async def _compact_when_idle(self) -> None:
        """Compact once no operation came for :data:`IDLE_S`: an acknowledgement waiting for the
        journal never waits for a snapshot rewrite during a burst."""
        try:
            while True:
                await asyncio.sleep(IDLE_S)
                if time.monotonic() - self._last_op >= IDLE_S and not self._queue:
                    break
            if self._writer is None or self._writer.done():
                await self._compact()
        finally:
            self._idle = None

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
            await self.store.replace(self.name, self.encode(self.state), position=self._position)
        except OSError as exc:
            log.warning("%s cannot compact %s (the journal keeps growing): %s", self.label, self.where, exc)
            return
        self._since_snapshot = 0
