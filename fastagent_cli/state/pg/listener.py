"""``LISTEN``: what other instances announce, delivered to this process's handlers in order.

One connection listens on every channel a handler asked for. Notifications are handled one at a
time in arrival order (a handler may await, e.g. to fetch a spilled payload), so what one
instance announced in order is handled in order. When the connection is lost it is reopened with
a capped exponential backoff; since notifications sent meanwhile are gone, every
:attr:`Listener.on_gap` callback is then called so its owner can catch up from the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fastagent_cli.state.pg.driver import reason
from fastagent_cli.state.pg.link import BACKOFF_MAX_S, BACKOFF_START_S

if TYPE_CHECKING:
    import asyncpg

    from fastagent_cli.state.pg.driver import Connector

__all__ = ["Handler", "Listener"]

log = logging.getLogger("fastagent.database")

Handler = Callable[[str], Awaitable[None]]


class Listener:
    def __init__(self, db: Connector) -> None:
        self.db = db
        self.on_gap: list[Callable[[], None]] = []
        self._handlers: dict[str, list[Handler]] = {}
        self._conn: asyncpg.Connection | None = None
        self._inbox: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._dispatcher: asyncio.Task[None] | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._closed = False

    async def subscribe(self, channel: str, handler: Handler) -> None:
        """Call ``handler(payload)`` for every notification on ``channel`` from now on."""
        first = channel not in self._handlers
        self._handlers.setdefault(channel, []).append(handler)
        if first and self._conn is not None:
            await self._conn.add_listener(channel, self._received)

    async def start(self) -> None:
        self._conn = await self._open()
        self._dispatcher = asyncio.create_task(self._dispatch(), name="database listener")

    async def _open(self) -> asyncpg.Connection:
        conn = await self.db.open_connection("listen")
        try:
            for channel in self._handlers:
                await conn.add_listener(channel, self._received)
        except BaseException:
            conn.terminate()
            raise
        conn.add_termination_listener(self._terminated)
        return conn

    def _received(self, conn: object, pid: int, channel: str, payload: object) -> None:
        self._inbox.put_nowait((channel, str(payload)))

    async def _dispatch(self) -> None:
        while True:
            channel, payload = await self._inbox.get()
            for handler in list(self._handlers.get(channel, ())):
                try:
                    await handler(payload)
                except Exception:
                    log.exception("[database] a notification handler failed on %s", channel)

    def _terminated(self, conn: object) -> None:
        if conn is not self._conn or self._closed:
            return
        self._conn = None
        log.warning("[database] lost the listening connection; reconnecting")
        if self._reconnecting is None or self._reconnecting.done():
            self._reconnecting = asyncio.create_task(self._reconnect(), name="database listener reconnect")

    async def _reconnect(self) -> None:
        delay = BACKOFF_START_S
        while not self._closed:
            await asyncio.sleep(delay * (0.5 + random.random() / 2))
            try:
                self._conn = await self._open()
            except Exception as exc:
                log.debug("[database] listener reconnect failed: %s", reason(exc))
                delay = min(delay * 2, BACKOFF_MAX_S)
                continue
            log.info("[database] listening again")
            for callback in list(self.on_gap):
                try:
                    callback()
                except Exception:
                    log.exception("[database] a gap callback failed")
            return

    async def aclose(self) -> None:
        self._closed = True
        for task in (self._reconnecting, self._dispatcher):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), 1.0)
            except (Exception, asyncio.CancelledError):
                conn.terminate()
