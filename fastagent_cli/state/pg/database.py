"""One process's connections to the shared database.

* a **pool** for reads and independent writes (listing, claims, channel state); a connection it
  lost is replaced on the next use, and a use that fails for want of the server raises a
  retryable :class:`~fastagent_cli.errors.DatabaseError` at once;
* the **link** (:mod:`.link`): this instance's own connection, holding its session leases as
  advisory locks (which die with it) and carrying, in order, the writes made under them;
* the **listener** (:mod:`.listener`): ``LISTEN`` for what other instances announce.

:meth:`Database.connect` opens all three and applies pending migrations; the database being
unreachable then is one clear :class:`~fastagent_cli.errors.DatabaseError` line
(``cannot connect to the database postgresql://fa@db:5432/agent (FASTAGENT_DATABASE_URL):
connection refused``), never a traceback. Afterwards the link and the listener reconnect by
themselves with a capped exponential backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

from fastagent_cli.errors import DatabaseError, FastagentError
from fastagent_cli.state.pg.driver import asyncpg_module, is_connection_loss, reason
from fastagent_cli.state.pg.link import Link
from fastagent_cli.state.pg.listener import Listener
from fastagent_cli.state.pg.migrations import migrate
from fastagent_cli.state.pg.settings import DatabaseSettings, advisory_key

if TYPE_CHECKING:
    import asyncpg

    from fastagent_cli.state.pg.driver import Conn

__all__ = ["CONNECT_TIMEOUT_S", "COMMAND_TIMEOUT_S", "Database"]

log = logging.getLogger("fastagent.database")


def _pool_floor_retry(record: logging.LogRecord) -> bool:
    """asyncpg's pool logs a warning with a traceback at every failed attempt to restore its
    minimum connection during an outage; the link already says the database is lost (one line)
    and back (one line), so these become debug lines without the traceback."""
    if record.getMessage().startswith("Failed to restore the pool connection floor"):
        error = record.exc_info[1] if record.exc_info else None
        log.debug("[database] pool reconnect attempt failed: %s", reason(error) if error else "unknown")
        return False
    return True


logging.getLogger("asyncpg.pool").addFilter(_pool_floor_retry)

T = TypeVar("T")
_LIVE = """
SELECT t.id FROM unnest($1::text[], $2::bigint[]) AS t(id, k)
WHERE EXISTS (
    SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.classid = ((t.k >> 32) & 4294967295)::oid AND l.objid = (t.k & 4294967295)::oid
)
"""
CONNECT_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 30.0


class Database:
    """The shared database of one agent, as this process (one instance) uses it."""

    def __init__(self, settings: DatabaseSettings, *, instance: str | None = None) -> None:
        self.settings = settings
        self.instance = instance or uuid.uuid4().hex[:12]
        """This process's id among the instances (a fresh one every start)."""
        self.link = Link(self)
        self.listener = Listener(self)
        self._pool: asyncpg.Pool | None = None
        self._opening: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def namespace(self) -> str:
        return self.settings.namespace

    # --- connecting -----------------------------------------------------------------------------

    async def connect(self) -> None:
        """Open the pool, apply pending migrations, open the link and the listener (once; later
        calls wait for the first). DatabaseError when the database cannot be used."""
        if self._closed:
            raise DatabaseError("the database connections are closed", retryable=False)
        if self._opening is None or (self._opening.done() and self._opening.exception() is not None):
            self._opening = asyncio.ensure_future(self._open())
        await asyncio.shield(self._opening)

    async def _open(self) -> None:
        driver = asyncpg_module()
        try:
            pool: asyncpg.Pool = await driver.create_pool(
                self.settings.url,
                min_size=1,
                max_size=self.settings.pool_size,
                timeout=CONNECT_TIMEOUT_S,
                command_timeout=COMMAND_TIMEOUT_S,
                server_settings=self.server_settings("pool"),
            )
        except Exception as exc:
            raise self.unreachable(exc) from None
        try:
            async with pool.acquire() as conn:
                applied = await migrate(conn)
            for version, description in applied:
                log.info("[database] applied migration %d: %s", version, description)
            await self.link.start()
            await self.listener.start()
        except FastagentError:
            await _terminate(pool)
            raise
        except Exception as exc:
            await _terminate(pool)
            raise self.unreachable(exc) from None
        self._pool = pool

    def server_settings(self, role: str) -> dict[str, str]:
        return {"application_name": f"fastagent/{self.instance}/{role}"[:63]}

    async def open_connection(self, role: str, **settings: str) -> asyncpg.Connection:
        """A connection of its own (the link, the listener); raises the driver's errors."""
        driver = asyncpg_module()
        conn: asyncpg.Connection = await driver.connect(
            self.settings.url,
            timeout=CONNECT_TIMEOUT_S,
            command_timeout=COMMAND_TIMEOUT_S,
            server_settings={**self.server_settings(role), **settings},
        )
        return conn

    def unreachable(self, exc: BaseException) -> DatabaseError:
        """``cannot connect to the database <url> (<setting>): <reason>``."""
        return DatabaseError(
            f"cannot connect to the database {self.settings.shown} ({self.settings.source}): {reason(exc)}",
            retryable=is_connection_loss(exc),
        )

    # --- using the pool -------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Conn]:
        """A pooled connection. The driver's errors pass through (see :meth:`run`)."""
        await self.connect()
        assert self._pool is not None
        async with self._pool.acquire() as conn:
            yield conn

    async def run(self, what: str, work: Callable[[Conn], Awaitable[T]]) -> T:
        """``work`` on a pooled connection; DatabaseError (``cannot <what>: <reason>``, retryable
        when the connection went away) for a driver error."""
        try:
            async with self.connection() as conn:
                return await work(conn)
        except FastagentError:
            raise
        except Exception as exc:
            if not _driver_error(exc):
                raise
            raise DatabaseError(f"cannot {what}: {reason(exc)}", retryable=is_connection_loss(exc)) from exc

    async def live_instances(self, instances: Collection[str]) -> set[str]:
        """Which of ``instances`` are running: an instance is alive while its link holds its
        advisory lock, so one that was killed is gone as soon as its connection is."""
        wanted = sorted(set(instances))
        if not wanted:
            return set()
        keys = [advisory_key("instance", instance) for instance in wanted]
        rows = await self.run("ask which instances run", lambda conn: conn.fetch(_LIVE, wanted, keys))
        return {row["id"] for row in rows}

    async def aclose(self) -> None:
        """Close the link (its leases go with it), the listener and the pool."""
        self._closed = True
        opening = self._opening
        if opening is not None and not opening.done():
            opening.cancel()
            with contextlib.suppress(BaseException):
                await opening
        await self.link.aclose()
        await self.listener.aclose()
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), 2.0)
            except (Exception, asyncio.CancelledError):
                pool.terminate()


def _driver_error(exc: BaseException) -> bool:
    if is_connection_loss(exc):
        return True
    module: Any = type(exc).__module__ or ""
    return str(module).startswith("asyncpg")


async def _terminate(pool: asyncpg.Pool) -> None:
    pool.terminate()
    await asyncio.sleep(0)
