"""Per-session FIFO turn queue (feature K4): one turn at a time per session, sessions concurrent,
at most :data:`MAX_RUNNING_TURNS` of them running at once.

In memory only: durability is the turn store's job, layered on top by the channel. A second turn
for a busy session waits for the first instead of colliding on the session lease, and
``on_queued_behind`` is called at once so the channel can tell the asker ("⏳ Queued ...").
Every accepted turn counts as in-flight work (:mod:`~fastagent_cli.channels.kit.work`) from
acceptance until it settles.

The bound on running turns keeps a burst of new conversations from running all at once: 500 turns
started together share the event loop, the HTTP connection pool and the disk, so each took as long
as all of them together (the first answers came after minutes, and the webhook acknowledgements
waited behind that work). Over the bound, turns wait for a free slot in acceptance order (a turn
waiting for its session's previous turn holds no slot), and are answered at the rate the machine
sustains.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from fastagent_cli.channels.kit.work import begin_work, cancel_all

__all__ = ["MAX_RUNNING_TURNS", "TurnQueue"]

log = logging.getLogger("fastagent.channel")

T = TypeVar("T")

MAX_RUNNING_TURNS = 32
"""Turns of one channel running at once (across sessions); the rest wait in acceptance order."""


class TurnQueue(Generic[T]):
    def __init__(
        self,
        run: Callable[[T], Awaitable[None]],
        *,
        label: str,
        session_of: Callable[[T], str],
        on_queued_behind: Callable[[T], None] | None = None,
        max_running: int = MAX_RUNNING_TURNS,
    ) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self._run = run
        self._label = label
        self._session_of = session_of
        self._on_queued_behind = on_queued_behind
        self._tails: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(max_running)
        self._running = 0

    def accept(self, item: T) -> None:
        """Schedule ``item`` after the session's previous turn."""
        session = self._session_of(item)
        previous = self._tails.get(session)
        if previous is not None and self._on_queued_behind is not None:
            try:
                self._on_queued_behind(item)
            except Exception:
                log.exception("%s the queued-behind hook failed (session=%s)", self._label, session)
        task = asyncio.create_task(self._after(previous, item, begin_work()))
        self._tails[session] = task
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._drop_tail(session, done))

    async def _after(self, previous: asyncio.Task[None] | None, item: T, finish: Callable[[], None]) -> None:
        try:
            if previous is not None:
                await asyncio.wait({previous})
            async with self._slots:
                self._running += 1
                try:
                    await self._run(item)
                finally:
                    self._running -= 1
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s a turn runner raised (session=%s)", self._label, self._session_of(item))
        finally:
            finish()

    def _drop_tail(self, session: str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._tails.get(session) is task:
            del self._tails[session]

    def busy(self, session: str) -> bool:
        return session in self._tails

    @property
    def running(self) -> int:
        """Turns running now (at most ``max_running``)."""
        return self._running

    @property
    def sessions(self) -> list[str]:
        return list(self._tails)

    async def idle(self) -> None:
        """Wait until every queued turn has settled (tests, observability; never a drain)."""
        while self._tails:
            await asyncio.wait(set(self._tails.values()))

    async def aclose(self) -> None:
        """Cancel every queued and running turn."""
        await cancel_all(self._tasks)
