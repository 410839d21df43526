"""Session records in the shared database (``state_backend = "postgres"``).

:class:`PgSessionStore` is a :class:`~fastagent_cli.sessions.store.SessionStore` on the schema of
:mod:`fastagent_cli.state.pg.schema`: one ``fastagent_sessions`` row per record (pi's v3 header
line, plus the summary the listing reads, so listing 10 000 sessions reads no record) and its
entry lines in ``fastagent_entries``, append-only and numbered.

* **The lease** is an advisory lock on this instance's link (:mod:`fastagent_cli.state.pg.link`):
  one in-flight turn per session across every instance, freed at once when the holder's
  connection dies (a crashed instance frees its sessions by itself).
* **Appends** are queued on the link and group-committed (:mod:`.pg_records`); a turn's record
  is flushed before the turn reports ``completed``, and a write that failed (the database went
  away mid-turn) fails the turn with a retryable ``session_store_error``. What was not committed
  is visible to nobody: each append is one transaction, and the lease is released on the same
  connection after the writes it covered.
* **Reads** wait for this process's pending appends to that session (a watcher reading
  ``entries()`` after an event sees its entry) and then fetch only the lines added since the
  cached copy.

Creating a record (with inherited entries), forking and importing are single transactions;
``delete`` removes the row and its lines together.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fastagent_cli.errors import DatabaseError, SessionError
from fastagent_cli.sessions.inherit import Inheritance, inherited_entries
from fastagent_cli.sessions.listing import SessionSummary, parse_iso_ms, summarize
from fastagent_cli.sessions.pg_records import Appender, CachedRecord, RecordCache, parse_lines, summary_of
from fastagent_cli.sessions.record import SessionRecord, new_header
from fastagent_cli.sessions.store import (
    ForkConflict,
    Release,
    SessionLease,
    fork_entries,
    fork_header,
    same_fork,
)
from fastagent_cli.state.atomic import dumps_line
from fastagent_cli.state.pg.settings import advisory_key

if TYPE_CHECKING:
    from fastagent_cli.state.pg.database import Database
    from fastagent_cli.state.pg.driver import Conn

__all__ = ["PgSessionStore"]

T = TypeVar("T")
Entry = dict[str, Any]

_LOAD = """
SELECT s.rid, s.header, e.seq, e.line
FROM fastagent_sessions s LEFT JOIN fastagent_entries e ON e.rid = s.rid AND e.seq > $3
WHERE s.namespace = $1 AND s.session = $2
ORDER BY e.seq
"""
_LIST = """
SELECT session, created, modified, message_count, first_prompt, name
FROM fastagent_sessions WHERE namespace = $1 ORDER BY modified DESC, rid DESC
"""


class _Lease:
    __slots__ = ("epoch", "key")

    def __init__(self, key: int) -> None:
        self.key = key
        self.epoch: int | None = None


class PgSessionStore:
    def __init__(self, db: Database, cwd: str | os.PathLike[str] | None = None, *, sync: bool = True) -> None:
        self.db = db
        self.namespace = db.namespace
        self.cwd = str(Path(cwd or os.getcwd()).resolve())
        self.sync = sync
        """Commit appends synchronously (durable on the server's disk before ``completed``)."""
        self._cache = RecordCache()
        self._pending: dict[str, set[asyncio.Future[None]]] = {}
        self._held: dict[str, _Lease] = {}
        self._listing: list[SessionSummary] = []

    # --- leases ---------------------------------------------------------------------------------

    def leased(self, session: str) -> SessionLease:
        return SessionLease(session, self.lease)

    async def lease(self, session: str) -> Release | None:
        """The acquire step of :meth:`leased` (callers hold the lease with ``leased``)."""
        if session in self._held:
            return None
        lease = self._held[session] = _Lease(advisory_key(self.namespace, "session", session))
        try:
            await self.db.connect()
            epoch = await self.db.link.try_lock(lease.key)
        except DatabaseError as exc:
            del self._held[session]
            raise SessionError(f"cannot lease the session: {exc.message}", retryable=exc.retryable) from exc
        except BaseException:
            del self._held[session]
            raise
        if epoch is None:
            del self._held[session]
            return None
        lease.epoch = epoch

        def release() -> asyncio.Future[None] | None:
            if self._held.get(session) is lease:
                del self._held[session]
                return self.db.link.unlock(lease.key, epoch)
            return None

        return release

    # --- reading --------------------------------------------------------------------------------

    async def _run(self, what: str, work: Callable[[Conn], Awaitable[T]]) -> T:
        try:
            return await self.db.run(f"{what} the session store", work)
        except DatabaseError as exc:
            raise SessionError(exc.message, retryable=exc.retryable) from exc

    async def _load(self, session: str) -> CachedRecord | None:
        waiting = self._pending.get(session)
        if waiting:
            await asyncio.wait(set(waiting))
        cached = self._cache.get(session)
        after = cached.last_seq if cached is not None else 0
        rows = await self._run("read", lambda conn: conn.fetch(_LOAD, self.namespace, session, after))
        if not rows:
            self._cache.drop(session)
            return None
        if cached is not None and cached.rid != rows[0]["rid"]:  # replaced under the same id
            self._cache.drop(session)
            return await self._load(session)
        if cached is None:
            header_line = str(rows[0]["header"])
            header = parse_lines(session, [header_line])
            cached = CachedRecord(int(rows[0]["rid"]), header[0] if header else {}, header_line, 0, False)
        added = [row for row in rows if row["seq"] is not None]
        if added:
            entries = parse_lines(session, [row["line"] for row in added])
            cached.entries.extend(entries)
            cached.last_seq = int(added[-1]["seq"])
            cached.has_prompt = cached.has_prompt or summary_of(entries, False)[1] is not None
        self._cache.put(session, cached)
        return cached

    async def read(self, session: str) -> SessionRecord | None:
        cached = await self._load(session)
        return None if cached is None else SessionRecord(session, cached.header, list(cached.entries))

    async def open_if_exists(self, session: str) -> SessionRecord | None:
        cached = await self._load(session)
        if cached is None:
            return None
        lease = self._held.get(session)
        appender = Appender(
            self.db,
            self._cache,
            self._pending,
            session,
            cached,
            lease.epoch if lease is not None else None,
            sync=self.sync,
        )
        record = SessionRecord(
            session, cached.header, list(cached.entries), sink=appender, flush=appender.flush
        )
        record.reconcile()
        return record

    async def open_or_create(self, session: str, inherit: Inheritance | None = None) -> SessionRecord:
        record = await self.open_if_exists(session)
        if record is not None:
            return record
        entries: list[Entry] = []
        if inherit is not None:
            parent = await self.open_if_exists(inherit.parent_session)
            if parent is not None:
                entries = inherited_entries(parent, inherit)
        header = new_header(session, self.cwd, inherit.parent_session if inherit else None)
        await self._insert(session, header, [dumps_line(e) for e in entries], entries)
        record = await self.open_if_exists(session)
        if record is None:
            raise SessionError(f"session {session!r} was deleted while it was being created", retryable=True)
        return record

    async def _insert(
        self, session: str, header: Entry, lines: Sequence[str], entries: Sequence[Entry]
    ) -> bool:
        """Create the record in one transaction; ``False`` when ``session`` exists already."""
        messages, first, name = summary_of(entries, False)
        created = datetime.fromtimestamp((parse_iso_ms(header.get("timestamp")) or 0) / 1000, UTC)

        async def insert(conn: Conn) -> bool:
            async with conn.transaction():
                rid = await conn.fetchval(
                    "INSERT INTO fastagent_sessions (namespace, session, header, created, entry_count, "
                    "message_count, first_prompt, name) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
                    "ON CONFLICT (namespace, session) DO NOTHING RETURNING rid",
                    self.namespace,
                    session,
                    dumps_line(header),
                    created,
                    len(lines),
                    messages,
                    first or "",
                    name,
                )
                if rid is None:
                    return False
                if lines:
                    await conn.execute(
                        "INSERT INTO fastagent_entries (rid, seq, line) "
                        "SELECT $1, t.o, t.l FROM unnest($2::text[]) WITH ORDINALITY AS t(l, o)",
                        rid,
                        list(lines),
                    )
                return True

        return await self._run("write", insert)

    def location(self, session: str) -> Path | None:
        return None

    def list_sessions(self, limit: int | None = 30) -> list[SessionSummary]:
        return self._listing if limit is None else self._listing[:limit]

    async def listing(self, limit: int | None = 30) -> list[SessionSummary]:
        sql = _LIST if limit is None else f"{_LIST} LIMIT {int(limit)}"
        rows = await self._run("read", lambda conn: conn.fetch(sql, self.namespace))
        found = [
            summarize(
                row["session"],
                None,
                row["first_prompt"],
                row["modified"].timestamp(),
                created=row["created"].timestamp(),
                message_count=row["message_count"],
                name=row["name"],
            )
            for row in rows
        ]
        self._listing = found
        return found

    # --- changing -------------------------------------------------------------------------------

    async def fork(self, source: SessionRecord, at: str, into: str) -> bool:
        entries = fork_entries(source, at)
        header = fork_header(into, self.cwd, source, at, source.session)
        if await self._insert(into, header, [dumps_line(e) for e in entries], entries):
            return True
        existing = await self.read(into)
        if existing is not None and same_fork(existing.header, source.session, at):
            return False
        raise ForkConflict(f"session {into!r} already exists with a different history")

    async def delete(self, session: str) -> bool:
        self._cache.drop(session)
        rid = await self._run(
            "write",
            lambda conn: conn.fetchval(
                "DELETE FROM fastagent_sessions WHERE namespace = $1 AND session = $2 RETURNING rid",
                self.namespace,
                session,
            ),
        )
        return rid is not None

    async def export(self, session: str) -> bytes | None:
        cached = await self._load(session)
        if cached is None:
            return None
        rows = await self._run(
            "read",
            lambda conn: conn.fetch(
                "SELECT line FROM fastagent_entries WHERE rid = $1 ORDER BY seq", cached.rid
            ),
        )
        lines = [cached.header_line, *(row["line"] for row in rows)]
        return "".join(line + "\n" for line in lines).encode("utf-8")

    async def import_record(self, session: str, header: dict[str, Any], body: bytes) -> Path | None:
        lines = [line for line in body.decode("utf-8").split("\n") if line.strip()]
        if not await self._insert(session, header, lines, parse_lines(session, lines)):
            raise SessionError(f"session {session!r} exists already")
        return None
