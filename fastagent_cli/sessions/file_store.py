"""Session records as files in pi's layout: :class:`FileSessionStore` (see the
:mod:`~fastagent_cli.sessions.store` overview)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.encoding import encode_session_id
from fastagent_cli.sessions.files import Publication, RecordFiles
from fastagent_cli.sessions.fork import ForkConflict, fork_entries, fork_header, same_fork
from fastagent_cli.sessions.group_publish import GroupPublisher
from fastagent_cli.sessions.inherit import Inheritance, inherited_entries
from fastagent_cli.sessions.listing import SessionIndex, SessionSummary
from fastagent_cli.sessions.parsed import ParsedFiles
from fastagent_cli.sessions.record import SessionRecord, new_header
from fastagent_cli.sessions.store_errors import store_error
from fastagent_cli.sessions.store_protocol import Release, SessionLease
from fastagent_cli.state.atomic import append_jsonl, dumps_line
from fastagent_cli.state.locks import FileLock

__all__ = ["FileSessionStore"]

_THREAD_THRESHOLD = 256 * 1024
"""When more than this is unread in a record, it is parsed in a worker thread, off the loop."""


class FileSessionStore:
    """Records as files in pi's layout (see :mod:`~fastagent_cli.sessions.files`)."""

    def __init__(self, directory: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> None:
        base = Path(cwd or os.getcwd()).resolve()
        path = Path(os.path.expanduser(os.fspath(directory)))
        self.directory = path if path.is_absolute() else base / path
        self.cwd = str(base)
        self._parsed = ParsedFiles()
        self.files = RecordFiles(self.directory, self.cwd, self.try_lease)
        self._own_index = SessionIndex(self.files.own, persist=True, spec=True, cwd=self.cwd)
        self._index = SessionIndex(self.files.directory, persist=True)
        self._creating: dict[str, asyncio.Future[tuple[Path, bool]]] = {}
        self._publisher = GroupPublisher(self.files)

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
        """Publish a new record off the loop (it ends in an fsync, which a busy disk makes slow),
        in the group of every record asked for in this tick (:mod:`~fastagent_cli.sessions.group_publish`:
        a thousand sessions starting at once are one thread job, one hold of the creation lock,
        one ``syncfs``). The publish runs to the end even when the turn that started it is cancelled, so a
        cancelled turn still leaves the record it created; until it is in place, readers in this
        process wait for it instead of finding nothing."""
        creating = self._creating.get(session)
        if creating is None:
            creating = self._publisher.publish(Publication(session, header, body))
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
        """Both layouts' records, newest first; an id with a record in both is the spec's (the
        one :meth:`open_if_exists` opens)."""
        own = self._own_index.list(None)
        ids = {summary.session for summary in own}
        found = own + [summary for summary in self._index.list(None) if summary.session not in ids]
        found.sort(key=lambda summary: summary.modified, reverse=True)
        return found if limit is None else found[:limit]

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
        self._own_index.forget(path)
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

    def leased(self, session: str) -> SessionLease:
        return SessionLease(session, self.lease)

    async def lease(self, session: str) -> Release | None:
        """The acquire step of :meth:`leased` (callers hold the lease with ``leased``)."""
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
