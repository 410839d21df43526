"""The session store port: :class:`SessionStore` (what every store answers) and its lease.

There is one way to hold a session's write lease: ``async with store.leased(session):`` (a
:class:`SessionLease`). Entering takes the lease or raises :class:`~fastagent_cli.errors.
SessionBusyError` at once; leaving frees it and waits (boundedly) until another instance can take
it. Work that outlives the block it was admitted in (a manual compaction) enters the lease on a
:class:`contextlib.AsyncExitStack` and hands the stack over with ``pop_all()``.

A store implements the lease with its own acquire step (``lease(session) -> Release | None``),
which only :class:`SessionLease` calls."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from fastagent_cli.errors import SessionBusyError
from fastagent_cli.sessions.inherit import Inheritance
from fastagent_cli.sessions.listing import SessionSummary
from fastagent_cli.sessions.record import SessionRecord

__all__ = ["RELEASE_WAIT_S", "Acquire", "Release", "SessionLease", "SessionStore", "release_lease"]

Release = Callable[[], Awaitable[None] | None]
"""Frees a session's lease. A store that releases later (the database's: on its connection, after
the writes the lease covered) returns what to await until others can take it."""
Acquire = Callable[[str], Awaitable[Release | None]]
"""A store's acquire step: the session's lease (what frees it), or ``None`` at once when it is
held; SessionError when the store cannot be asked."""
RELEASE_WAIT_S = 5.0


async def release_lease(release: Release) -> None:
    """Free the lease and wait (boundedly) until another instance can take it, so whoever hears
    that a run is over finds the session free wherever it asks."""
    pending = release()
    if pending is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pending), RELEASE_WAIT_S)


class SessionLease:
    """A session's write lease for the ``async with`` block: one run, compaction or settings
    write per session at a time, across processes (and instances, on a shared database).

    Entering takes it (SessionBusyError at once when it is held, SessionError when the store
    cannot be asked); leaving frees it, whatever ended the block, and waits (boundedly) until
    another instance can take it, so whoever hears that the work is over finds the session free.
    One lease is entered once."""

    __slots__ = ("_acquire", "_release", "_used", "session")

    def __init__(self, session: str, acquire: Acquire) -> None:
        self.session = session
        self._acquire = acquire
        self._release: Release | None = None
        self._used = False

    async def __aenter__(self) -> SessionLease:
        if self._used:
            raise RuntimeError(f"the lease of session {self.session!r} was entered already")
        self._used = True
        release = await self._acquire(self.session)
        if release is None:
            raise SessionBusyError(self.session)
        self._release = release
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        release, self._release = self._release, None
        if release is not None:
            await release_lease(release)


class SessionStore(Protocol):
    async def open_or_create(self, session: str, inherit: Inheritance | None = None) -> SessionRecord:
        """The record to write a turn into (created, or repaired when it has dangling calls)."""
        ...

    async def open_if_exists(self, session: str) -> SessionRecord | None:
        """Like :meth:`open_or_create` for an existing record; ``None`` when there is none."""
        ...

    async def read(self, session: str) -> SessionRecord | None:
        """The record as stored, for display: never repaired, never written (its appends stay in
        memory)."""
        ...

    def leased(self, session: str) -> SessionLease:
        """The session's write lease, taken for an ``async with`` block (:class:`SessionLease`):
        SessionBusyError at once when a run, a compaction or a settings write holds it, in this
        process or another; SessionError when the store cannot be asked."""
        ...

    def location(self, session: str) -> Path | None:
        """Where the record lives (``None`` in memory or in a database, or when there is no
        record)."""
        ...

    def list_sessions(self, limit: int | None = 30) -> list[SessionSummary]:
        """Stored sessions, most recently written first (blocking IO: call it off the loop; a
        database store answers with its last :meth:`listing`); SessionError when the store
        cannot be read."""
        ...

    async def listing(self, limit: int | None = 30) -> list[SessionSummary]:
        """:meth:`list_sessions` without blocking the loop."""
        ...

    async def fork(self, source: SessionRecord, at: str, into: str) -> bool:
        """Create ``into`` from ``source``'s path up to ``at`` (:func:`fork_entries`); ``False``
        when ``into`` already is that very fork (nothing written). ForkConflict when ``into``
        holds another history; KeyError when ``at`` is not a position of ``source``."""
        ...

    async def delete(self, session: str) -> bool:
        """Remove the record (and its lock); ``False`` when there was none. Call it holding the
        session's lease."""
        ...

    async def export(self, session: str) -> bytes | None:
        """The record as JSONL, header first (its lines' bytes as stored); ``None`` when there is
        no record."""
        ...

    async def import_record(self, session: str, header: dict[str, Any], body: bytes) -> Path | None:
        """Store a new record for ``session``: ``header``, then ``body`` (whole JSONL lines, kept
        byte for byte). SessionError when ``session`` has a record already."""
        ...
