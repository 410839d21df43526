"""Session stores: where records live and who may write them.

* :class:`FileSessionStore` keeps one file per session in pi's layout, which the TypeScript
  original and pi open as they are: ``--<workspace>--/<created>_<encoded id>.jsonl`` under the
  sessions directory (naming, lookup and the move of older flat records:
  :mod:`~fastagent_cli.sessions.files`). Lookup by id reads no file, so opening a session costs
  the same with 10 or 10 000 stored sessions. A new record is published complete (header written
  to a temp file, then hard-linked into place), so the user's question survives a crash and
  open-or-create stays idempotent across processes. Entries are appended with the state layer's
  whole-line JSONL append. The lease is a :class:`~fastagent_cli.state.locks.FileLock` on
  ``.locks/<name>.lock``: one in-flight turn per session, across threads *and* processes,
  released by the kernel if a process dies.
* :class:`MemorySessionStore` keeps records in a dict, for embedding and tests.
* :class:`~fastagent_cli.sessions.pg_store.PgSessionStore` keeps them in the shared database
  (``state_backend = "postgres"``), leased per session across instances.

Opening for a turn repairs the record (dangling tool calls get an interrupted result, written at
once); :meth:`SessionStore.read` is for display and never repairs or writes.

:meth:`SessionStore.fork` copies a session's active path up to an entry into a new record whose
header names its origin (``fastagentFork``), which makes a repeated fork a no-op;
:meth:`SessionStore.delete` removes a record and its lock.

Both stores inherit: a new session created with a ``parent_session`` starts from the parent's
active path (see :mod:`fastagent_cli.sessions.inherit`).

A file system that refuses (read-only, full, permission denied) surfaces as one
:class:`~fastagent_cli.errors.SessionError` saying ``cannot write the session store: <reason>``
(retryable when the disk is full), with the file in ``path`` for the server log.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from fastagent_cli.errors import SessionError
from fastagent_cli.messages import message_text
from fastagent_cli.sessions.encoding import encode_session_id
from fastagent_cli.sessions.files import RecordFiles
from fastagent_cli.sessions.inherit import Inheritance, inherited_entries
from fastagent_cli.sessions.listing import SessionIndex, SessionSummary, parse_iso_ms, summarize
from fastagent_cli.sessions.parsed import ParsedFiles
from fastagent_cli.sessions.record import SessionRecord, is_position, new_header
from fastagent_cli.sessions.store_errors import store_error
from fastagent_cli.state.atomic import append_jsonl, dumps_line, parse_jsonl
from fastagent_cli.state.locks import FileLock

__all__ = [
    "FORK_KEY",
    "FileSessionStore",
    "ForkConflict",
    "Inheritance",
    "MemorySessionStore",
    "Release",
    "SessionStore",
    "fork_entries",
    "release_lease",
    "fork_header",
    "same_fork",
]

Release = Callable[[], Awaitable[None] | None]
"""Frees a session's lease. A store that releases later (the database's: on its connection, after
the writes the lease covered) returns what to await until others can take it."""
RELEASE_WAIT_S = 5.0


async def release_lease(release: Release) -> None:
    """Free the lease and wait (boundedly) until another instance can take it, so whoever hears
    that a run is over finds the session free wherever it asks."""
    pending = release()
    if pending is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pending), RELEASE_WAIT_S)


FORK_KEY = "fastagentFork"
"""The header key naming a forked record's origin: ``{"session": <from>, "entryId": <at>}``."""


class ForkConflict(SessionError):
    """The fork's target already exists holding a different history."""


def fork_entries(source: SessionRecord, at: str) -> list[dict[str, Any]]:
    """The entries a fork of ``source`` at ``at`` starts with: the path from the root to ``at``,
    ids kept (so entry cursors stay valid), without labels or leaf markers. KeyError for an entry
    that is not a position in ``source``."""
    target = source.by_id.get(at)
    if target is None or not is_position(target):
        raise KeyError(at)
    return [dict(e) for e in source.path(at) if is_position(e)]


def fork_header(session: str, cwd: str, source: SessionRecord, at: str, parent: str) -> dict[str, Any]:
    header = new_header(session, cwd, parent)
    header[FORK_KEY] = {"session": source.session, "entryId": at}
    return header


def same_fork(header: dict[str, Any], source: str, at: str) -> bool:
    return header.get(FORK_KEY) == {"session": source, "entryId": at}


_THREAD_THRESHOLD = 256 * 1024
"""When more than this is unread in a record, it is parsed in a worker thread, off the loop."""


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

    async def lease(self, session: str) -> Release | None:
        """The session's write lease, or ``None`` at once when a turn (or a settings write) holds
        it, in this process or another. SessionError when the store cannot be asked."""
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


class MemorySessionStore:
    """Records in memory. Every open returns a fresh view over the same entry list, as a file
    reopen would."""

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.cwd = str(Path(cwd or os.getcwd()).resolve())
        self._records: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self._modified: dict[str, float] = {}
        self._leased: set[str] = set()

    async def open_or_create(self, session: str, inherit: Inheritance | None = None) -> SessionRecord:
        if session not in self._records:
            header = new_header(session, self.cwd, inherit.parent_session if inherit else None)
            entries: list[dict[str, Any]] = []
            if inherit is not None:
                parent = await self.open_if_exists(inherit.parent_session)
                if parent is not None:
                    entries = inherited_entries(parent, inherit)
            self._records[session] = (header, entries)
            self._modified[session] = time.time()
        return self._view(session)

    async def open_if_exists(self, session: str) -> SessionRecord | None:
        return self._view(session) if session in self._records else None

    async def read(self, session: str) -> SessionRecord | None:
        if session not in self._records:
            return None
        header, entries = self._records[session]
        return SessionRecord(session, header, list(entries))

    def _view(self, session: str) -> SessionRecord:
        header, entries = self._records[session]

        def sink(new: Sequence[dict[str, Any]]) -> None:
            entries.extend(new)
            self._modified[session] = time.time()

        record = SessionRecord(session, header, list(entries), sink=sink)
        record.reconcile()
        return record

    def location(self, session: str) -> Path | None:
        return None

    async def listing(self, limit: int | None = 30) -> list[SessionSummary]:
        return self.list_sessions(limit)

    def list_sessions(self, limit: int | None = 30) -> list[SessionSummary]:
        found = []
        for session, (header, entries) in self._records.items():
            record = SessionRecord(session, header, list(entries))
            messages = [e["message"] for e in entries if e.get("type") == "message"]
            first = next((message_text(m) for m in messages if m.get("role") == "user"), "")
            created = (parse_iso_ms(header.get("timestamp")) or 0) / 1000
            found.append(
                summarize(
                    session,
                    None,
                    first,
                    self._modified[session],
                    created=created,
                    message_count=len(messages),
                    name=record.name,
                )
            )
        found.sort(key=lambda s: s.modified, reverse=True)
        return found if limit is None else found[:limit]

    async def fork(self, source: SessionRecord, at: str, into: str) -> bool:
        entries = fork_entries(source, at)
        existing = self._records.get(into)
        if existing is not None:
            if same_fork(existing[0], source.session, at):
                return False
            raise ForkConflict(f"session {into!r} already exists with a different history")
        self._records[into] = (fork_header(into, self.cwd, source, at, source.session), entries)
        self._modified[into] = time.time()
        return True

    async def delete(self, session: str) -> bool:
        self._modified.pop(session, None)
        return self._records.pop(session, None) is not None

    async def export(self, session: str) -> bytes | None:
        return self.dump(session)

    def dump(self, session: str) -> bytes | None:
        if session not in self._records:
            return None
        header, entries = self._records[session]
        return "".join(dumps_line(line) + "\n" for line in [header, *entries]).encode("utf-8")

    async def import_record(self, session: str, header: dict[str, Any], body: bytes) -> Path | None:
        if session in self._records:
            raise SessionError(f"session {session!r} exists already")
        self._records[session] = (dict(header), parse_jsonl(body))
        self._modified[session] = time.time()
        return None

    async def lease(self, session: str) -> Release | None:
        return self.try_lease(session)

    def try_lease(self, session: str) -> Callable[[], None] | None:
        if session in self._leased:
            return None
        self._leased.add(session)
        return lambda: self._leased.discard(session)

    def sessions(self) -> list[str]:
        return list(self._records)


class FileSessionStore:
    """Records as files in pi's layout (see :mod:`~fastagent_cli.sessions.files`)."""

    def __init__(self, directory: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> None:
        base = Path(cwd or os.getcwd()).resolve()
        path = Path(os.path.expanduser(os.fspath(directory)))
        self.directory = path if path.is_absolute() else base / path
        self.cwd = str(base)
        self._parsed = ParsedFiles()
        self.files = RecordFiles(self.directory, self.cwd, self.try_lease)
        self._index = SessionIndex(self.files.directory, persist=True)
        self._creating: dict[str, asyncio.Future[tuple[Path, bool]]] = {}

    async def open_or_create(self, session: str, inherit: Inheritance | None = None) -> SessionRecord:
        record = await self.open_if_exists(session)
        if record is not None:
            return record
        entries: list[dict[str, Any]] = []
        if inherit is not None:
            parent = await self.open_if_exists(inherit.parent_session)
            if parent is not None:
                entries = inherited_entries(parent, inherit)
        header = new_header(session, self.cwd, inherit.parent_session if inherit else None)
        body = "".join(dumps_line(entry) + "\n" for entry in entries).encode("utf-8")
        path = await self._create(session, header, body)
        record = await self.open_if_exists(session)
        if record is None:
            raise SessionError(
                f"session record {path} vanished while it was being opened", retryable=True, path=str(path)
            )
        return record

    async def _create(self, session: str, header: dict[str, Any], body: bytes) -> Path:
        """Publish a new record off the loop (it ends in an fsync, which a busy disk makes slow,
        and a thousand sessions starting at once would otherwise queue every turn behind them).
        The publish runs to the end even when the turn that started it is cancelled, so a
        cancelled turn still leaves the record it created; until it is in place, readers in this
        process wait for it instead of finding nothing."""
        creating = self._creating.get(session)
        if creating is None:
            creating = asyncio.ensure_future(asyncio.to_thread(self.files.publish, session, header, body))
            self._creating[session] = creating
            creating.add_done_callback(lambda done: self._created(session, done))
        path, _ = await asyncio.shield(creating)
        return path

    def _created(self, session: str, done: asyncio.Future[tuple[Path, bool]]) -> None:
        self._creating.pop(session, None)
        if not done.cancelled():
            done.exception()  # retrieved: a creator cancelled meanwhile leaves no loop warning

    async def open_if_exists(self, session: str) -> SessionRecord | None:
        found = await self._load(session)
        if found is None:
            return None
        path, lines = found
        record = self._indexed(session, path, lines).continued(sink=lambda e: _append(path, e))
        record.reconcile()
        return record

    async def read(self, session: str) -> SessionRecord | None:
        found = await self._load(session)
        return None if found is None else self._indexed(session, *found).continued()

    async def _load(self, session: str) -> tuple[Path, list[dict[str, Any]]] | None:
        """The record's file and lines; ``None`` when there is no record."""
        creating = self._creating.get(session)
        if creating is not None:  # being published off the loop: wait (never cancels it)
            await asyncio.wait({creating})
        for _ in range(2):  # a record deleted since it was indexed: look once more
            path = self.files.find(session)
            if path is None:
                return None
            lines = await self._lines(path)
            if lines is not None:
                return path, lines
            self.files.forget(path)
        return None

    def _indexed(self, session: str, path: Path, lines: list[dict[str, Any]]) -> SessionRecord:
        """The record as read (never written to; callers get a :meth:`~SessionRecord.continued`
        copy), kept with the file's parsed lines and moved forward by the lines appended since,
        with its context: a turn's cost does not grow with the conversation's length."""
        kept = self._parsed.attached(path)
        if (
            isinstance(kept, _Indexed)
            and kept.record.session == session
            and lines[0] is kept.record.header
            and len(lines) >= kept.count
            and lines[kept.count - 1] is kept.last
        ):
            kept.record.extend(lines[kept.count :])
        else:
            kept = _Indexed(SessionRecord(session, lines[0], lines[1:]))
        kept.count, kept.last = len(lines), lines[-1]
        kept.record.context()  # remembered: the next turn's context starts from it
        self._parsed.attach(path, kept)
        return kept.record

    async def _lines(self, path: Path) -> list[dict[str, Any]] | None:
        """The record's lines, header first; ``None`` when the file is gone."""
        try:
            if self._parsed.pending_bytes(path) > _THREAD_THRESHOLD:
                lines = await asyncio.to_thread(self._parsed.read, path)
            else:
                lines = self._parsed.read(path)
        except FileNotFoundError:
            self._parsed.forget(path)
            return None
        except OSError as exc:
            raise store_error("read", exc, path) from exc
        if not lines or lines[0].get("type") != "session":
            raise SessionError(f"{path} is not a session record (no header line)", path=str(path))
        return lines

    def location(self, session: str) -> Path | None:
        return self.files.find(session)

    def list_sessions(self, limit: int | None = 30) -> list[SessionSummary]:
        return self._index.list(limit)

    async def listing(self, limit: int | None = 30) -> list[SessionSummary]:
        return await asyncio.to_thread(self.list_sessions, limit)

    async def fork(self, source: SessionRecord, at: str, into: str) -> bool:
        entries = fork_entries(source, at)
        origin = self.location(source.session)
        header = fork_header(into, self.cwd, source, at, str(origin) if origin else source.session)
        if self.files.find(into) is None:
            body = "".join(dumps_line(entry) + "\n" for entry in entries).encode("utf-8")
            _, created = await asyncio.to_thread(self.files.publish, into, header, body)
            if created:
                return True
        existing = await self.read(into)
        if existing is not None and same_fork(existing.header, source.session, at):
            return False
        raise ForkConflict(f"session {into!r} already exists with a different history")

    async def delete(self, session: str) -> bool:
        path = self.files.find(session)
        if path is None:
            return False
        self._parsed.forget(path)
        self._index.forget(path)
        self.files.forget(path)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise store_error("write", exc, path) from exc
        with contextlib.suppress(OSError):
            os.unlink(self._lock_path(session))
        return True

    async def export(self, session: str) -> bytes | None:
        return await asyncio.to_thread(self.dump, session)

    def dump(self, session: str) -> bytes | None:
        path = self.files.find(session)
        if path is None:
            return None
        try:
            return path.read_bytes()
        except FileNotFoundError:
            self.files.forget(path)
            return None
        except OSError as exc:
            raise store_error("read", exc, path) from exc

    async def import_record(self, session: str, header: dict[str, Any], body: bytes) -> Path | None:
        path, _ = await asyncio.to_thread(self.files.publish, session, header, body, fresh=True)
        return path

    def _lock_path(self, session: str) -> Path:
        return self.directory / ".locks" / f"{encode_session_id(session)}.lock"

    async def lease(self, session: str) -> Release | None:
        return self.try_lease(session)

    def try_lease(self, session: str) -> Callable[[], None] | None:
        lock = FileLock(self._lock_path(session))
        try:
            taken = lock.try_acquire()
        except OSError as exc:
            raise store_error("write", exc, lock.path) from exc
        return lock.release if taken else None

    def sessions(self) -> list[Path]:
        """Every record file of the workspace (for listings; per-turn paths never call this)."""
        return self.files.paths()


class _Indexed:
    """A file's record index: built from its first ``count`` lines, the last one being ``last``."""

    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        self.count = 0
        self.last: object = None


def _append(path: Path, entries: Sequence[dict[str, Any]]) -> None:
    try:
        append_jsonl(path, entries, create=False)
    except FileNotFoundError as exc:
        raise SessionError(f"session record {path} was deleted during the turn", path=str(path)) from exc
    except OSError as exc:
        raise store_error("write", exc, path) from exc
