"""The link: this instance's own connection, and the one order its leases, writes and
announcements take.

* **Leases** are session-level advisory locks taken on the link (:meth:`Link.try_lock`): they die
  with the connection, so an instance that crashes (or loses the database) frees its sessions
  for the others at once, without expiry timers.
* **Writes made under a lease** travel on the same connection (:meth:`Link.write`), tagged with
  the link's *epoch* (bumped whenever the connection is replaced). A write whose lease belonged
  to an earlier epoch is refused without touching the database: the lock it relied on is gone
  and another instance may hold the session now. That is the fence.
* **Announcements** (session events, run actions) are ``pg_notify`` calls queued in the same
  order (:meth:`Link.notify`), so a listener hears of an entry only once it is committed.

Queued work is group-committed: while one round trip is in flight the next items wait, and the
next round trip carries them all in one ``fastagent_write(...)`` call, one transaction (lock
requests batch the same way). Losing the connection fails every queued and in-flight item with
a retryable :class:`~fastagent_cli.errors.DatabaseError`, tells :attr:`Link.on_lost` listeners
which epoch ended, and reconnects in the background with a capped exponential backoff.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fastagent_cli.errors import DatabaseError
from fastagent_cli.state.pg.driver import is_connection_loss, reason
from fastagent_cli.state.pg.link_batch import Batch, EntryWrite, Notify, Unlock
from fastagent_cli.state.pg.settings import advisory_key

if TYPE_CHECKING:
    import asyncpg

    from fastagent_cli.state.pg.driver import Connector

__all__ = ["BACKOFF_MAX_S", "BACKOFF_START_S", "EntryWrite", "Link"]

log = logging.getLogger("fastagent.database")

BACKOFF_START_S = 0.2
BACKOFF_MAX_S = 5.0
KEEPALIVE = {"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "3"}
"""The server notices a vanished instance host within ~25 s (a killed process: at once)."""


@dataclass(slots=True)
class _Lock:
    key: int
    done: asyncio.Future[int | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


_Item = EntryWrite | Notify | Unlock | _Lock


class Link:
    def __init__(self, db: Connector) -> None:
        self.db = db
        self.epoch = 0
        """Which connection this is: leases and writes carry the epoch they were taken in."""
        self.on_lost: list[Callable[[int], None]] = []
        """Called with the epoch that ended when the connection is lost."""
        self._conn: asyncpg.Connection | None = None
        self._queue: collections.deque[_Item] = collections.deque()
        self._wake = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._closed = False
        self._down_since: float | None = None
        self._last_error = ""

    @property
    def up(self) -> bool:
        return self._conn is not None

    def holds(self, epoch: int | None) -> bool:
        """Is a lease taken in ``epoch`` still held (the connection it lives on still open)?"""
        return self._conn is not None and epoch == self.epoch

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the connection (the driver's errors propagate) and start the worker."""
        self._conn = await self._open()
        self.epoch += 1
        self._worker = asyncio.create_task(self._work(), name="database link")

    async def _open(self) -> asyncpg.Connection:
        conn = await self.db.open_connection("link", **KEEPALIVE)
        try:
            await conn.execute("SELECT pg_advisory_lock($1)", advisory_key("instance", self.db.instance))
        except BaseException:
            conn.terminate()
            raise
        conn.add_termination_listener(self._terminated)
        return conn

    def _terminated(self, conn: object) -> None:
        if conn is self._conn and not self._closed:
            self._lost(ConnectionError("the connection was closed"))

    async def aclose(self) -> None:
        self._closed = True
        for task in (self._reconnecting, self._worker):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        self._fail_queued(DatabaseError("the database link is closed", retryable=True))
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), 1.0)
            except (Exception, asyncio.CancelledError):
                conn.terminate()

    # --- what the stores call -------------------------------------------------------------------

    async def try_lock(self, key: int) -> int | None:
        """Take the advisory lock ``key``: the epoch it lives in, or ``None`` when another
        connection holds it. DatabaseError (retryable) while the link is down."""
        self._check_up()
        item = _Lock(key)
        self._push(item)
        return await item.done

    def unlock(self, key: int, epoch: int) -> asyncio.Future[None]:
        """Release a lock taken in ``epoch`` after what was queued before; the future settles once
        others can take it (at once when that connection is gone: the lock went with it)."""
        item = Unlock(key)
        if self.holds(epoch):
            self._push(item)
        else:
            item.done.set_result(None)
        return item.done

    def write(self, item: EntryWrite) -> None:
        """Queue entry lines; ``item.done`` settles once they are committed (or refused)."""
        if item.epoch is not None and not self.holds(item.epoch):
            item.done.set_exception(self._gone())
            return
        if self._conn is None:
            item.done.set_exception(self._gone())
            return
        self._push(item)

    def notify(self, channel: str, item: str) -> None:
        """Announce ``item`` (a JSON value) on ``channel`` after what was queued before; dropped
        while the link is down (announcements are live, not durable)."""
        if self._conn is not None:
            self._push(Notify(channel, item))

    # --- the worker -----------------------------------------------------------------------------

    def _push(self, item: _Item) -> None:
        self._queue.append(item)
        self._wake.set()

    def _check_up(self) -> None:
        if self._conn is None:
            raise self._gone()

    def _gone(self) -> DatabaseError:
        detail = f" ({self._last_error})" if self._last_error else ""
        return DatabaseError(f"lost the connection to the database{detail}; reconnecting", retryable=True)

    async def _work(self) -> None:
        while True:
            if not self._queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            conn = self._conn
            if conn is None:
                self._fail_queued(self._gone())
                continue
            locks: list[_Lock] = []
            writes: list[EntryWrite | Notify | Unlock] = []
            taking_locks = isinstance(self._queue[0], _Lock)  # a run of one kind, in queue order
            while self._queue and isinstance(self._queue[0], _Lock) == taking_locks:
                item = self._queue.popleft()
                if isinstance(item, _Lock):
                    locks.append(item)
                else:
                    writes.append(item)
            try:
                if locks:
                    await self._lock(conn, locks)
                else:
                    await Batch(self.db.instance, writes).run(conn, self.epoch)
            except Exception as exc:
                if not is_connection_loss(exc):
                    log.exception("[database] the link's worker failed")
                self._lost(exc)
                for pending in (*locks, *writes):
                    if isinstance(pending, Unlock) and not pending.done.done():
                        pending.done.set_result(None)  # the lock went with the connection
                    elif isinstance(pending, EntryWrite | _Lock) and not pending.done.done():
                        pending.done.set_exception(self._gone())

    async def _lock(self, conn: asyncpg.Connection, locks: list[_Lock]) -> None:
        rows = await conn.fetch(
            "SELECT pg_try_advisory_lock(t.k) FROM unnest($1::bigint[]) WITH ORDINALITY AS t(k, o) "
            "ORDER BY t.o",
            [item.key for item in locks],
        )
        epoch = self.epoch
        for item, row in zip(locks, rows, strict=True):
            if not item.done.done():
                item.done.set_result(epoch if row[0] else None)
            elif row[0]:  # the asker left (cancelled): give the lock back
                self._push(Unlock(item.key))

    # --- losing and regaining the connection ----------------------------------------------------

    def _lost(self, exc: BaseException) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        ended = self.epoch
        self.epoch += 1
        self._last_error = reason(exc)
        self._down_since = time.monotonic()
        log.warning(
            "[database] lost the link to the database (%s); its leases are gone, reconnecting", reason(exc)
        )
        conn.terminate()
        self._fail_queued(self._gone())
        for listener in list(self.on_lost):
            try:
                listener(ended)
            except Exception:
                log.exception("[database] a lost-link listener failed")
        if not self._closed and (self._reconnecting is None or self._reconnecting.done()):
            self._reconnecting = asyncio.create_task(self._reconnect(), name="database link reconnect")

    def _fail_queued(self, error: DatabaseError) -> None:
        while self._queue:
            item = self._queue.popleft()
            if isinstance(item, Unlock) and not item.done.done():
                item.done.set_result(None)
            elif isinstance(item, EntryWrite | _Lock) and not item.done.done():
                item.done.set_exception(error)

    async def _reconnect(self) -> None:
        delay = BACKOFF_START_S
        attempts = 0
        while not self._closed:
            await asyncio.sleep(delay * (0.5 + random.random() / 2))
            attempts += 1
            try:
                conn = await self._open()
            except Exception as exc:
                self._last_error = reason(exc)
                log.debug("[database] link reconnect attempt %d failed: %s", attempts, self._last_error)
                delay = min(delay * 2, BACKOFF_MAX_S)
                continue
            self._conn = conn
            self._last_error = ""
            down = time.monotonic() - (self._down_since or time.monotonic())
            log.info("[database] link reconnected after %.1f s (%d attempt(s))", down, attempts)
            self._wake.set()
            return
