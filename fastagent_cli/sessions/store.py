"""Session stores: where records live and who may write them.

* :class:`FileSessionStore` keeps one ``<encoded id>.jsonl`` per session in a directory. Lookup
  by id is a direct path, so opening a session costs the same with 10 or 10 000 stored sessions.
  A new record is published complete (header written to a temp file, then hard-linked into
  place), so the user's question survives a crash and open-or-create stays idempotent across
  processes. The lease is an ``flock`` on ``.locks/<name>.lock``: one in-flight turn per session,
  across threads *and* processes, released by the kernel if a process dies.
* :class:`MemorySessionStore` keeps records in a dict, for embedding and tests.

Both stores inherit: a new session created with a ``parent_session`` starts from the parent's
active path (see :mod:`fastagent_cli.sessions.inherit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.encoding import encode_session_id
from fastagent_cli.sessions.inherit import Inheritance, inherited_entries
from fastagent_cli.sessions.parsed import ParsedFiles
from fastagent_cli.sessions.record import SessionRecord, new_header
from fastagent_cli.state.atomic import dumps_line

__all__ = ["FileSessionStore", "Inheritance", "MemorySessionStore", "Release", "SessionStore"]

Release = Callable[[], None]

_THREAD_THRESHOLD = 256 * 1024
"""When more than this is unread in a record, it is parsed in a worker thread, off the loop."""


class SessionStore(Protocol):
    async def open_or_create(self, session: str, inherit: Inheritance | None = None) -> SessionRecord: ...

    async def open_if_exists(self, session: str) -> SessionRecord | None: ...

    def try_lease(self, session: str) -> Release | None: ...


class MemorySessionStore:
    """Records in memory. Every open returns a fresh view over the same entry list, as a file
    reopen would."""

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.cwd = str(Path(cwd or os.getcwd()).resolve())
        self._records: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
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
        return self._view(session)

    async def open_if_exists(self, session: str) -> SessionRecord | None:
        return self._view(session) if session in self._records else None

    def _view(self, session: str) -> SessionRecord:
        header, entries = self._records[session]
        record = SessionRecord(session, header, list(entries), sink=entries.extend)
        record.reconcile()
        return record

    def try_lease(self, session: str) -> Release | None:
        if session in self._leased:
            return None
        self._leased.add(session)
        return lambda: self._leased.discard(session)

    def sessions(self) -> list[str]:
        return list(self._records)


class FileSessionStore:
    def __init__(self, directory: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> None:
        base = Path(cwd or os.getcwd()).resolve()
        path = Path(os.path.expanduser(os.fspath(directory)))
        self.directory = path if path.is_absolute() else base / path
        self.cwd = str(base)
        self._parsed = ParsedFiles()

    def path_for(self, session: str) -> Path:
        return self.directory / f"{encode_session_id(session)}.jsonl"

    async def open_or_create(self, session: str, inherit: Inheritance | None = None) -> SessionRecord:
        path = self.path_for(session)
        if not path.exists():
            entries: list[dict[str, Any]] = []
            if inherit is not None:
                parent = await self.open_if_exists(inherit.parent_session)
                if parent is not None:
                    entries = inherited_entries(parent, inherit)
            header = new_header(session, self.cwd, inherit.parent_session if inherit else None)
            self._publish(path, [header, *entries])
        record = await self.open_if_exists(session)
        if record is None:
            raise SessionError(f"session record {path} vanished while it was being opened")
        return record

    async def open_if_exists(self, session: str) -> SessionRecord | None:
        path = self.path_for(session)
        try:
            if self._parsed.pending_bytes(path) > _THREAD_THRESHOLD:
                lines = await asyncio.to_thread(self._parsed.read, path)
            else:
                lines = self._parsed.read(path)
        except FileNotFoundError:
            self._parsed.forget(path)
            return None
        if not lines or lines[0].get("type") != "session":
            raise SessionError(f"{path} is not a session record (no header line)")
        record = SessionRecord(session, lines[0], lines[1:], sink=lambda e: _append(path, e))
        record.reconcile()
        return record

    def _publish(self, path: Path, lines: Sequence[dict[str, Any]]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{id(lines)}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write("".join(dumps_line(line) + "\n" for line in lines))
                fh.flush()
                os.fsync(fh.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)  # exclusive: a concurrent creator's record wins, ours is dropped
        except OSError as exc:
            raise SessionError(f"cannot create session record {path}: {exc.strerror or exc}") from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def try_lease(self, session: str) -> Release | None:
        locks = self.directory / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        fd = os.open(locks / f"{encode_session_id(session)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None

        def release() -> None:
            with contextlib.suppress(OSError):
                os.close(fd)

        return release

    def sessions(self) -> list[Path]:
        """Every record file (for listings; per-turn paths never call this)."""
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.glob("s*.jsonl"))


def _append(path: Path, entries: Sequence[dict[str, Any]]) -> None:
    payload = "".join(dumps_line(e) + "\n" for e in entries).encode("utf-8")
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
    except FileNotFoundError as exc:
        raise SessionError(f"session record {path} was deleted during the turn") from exc
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            payload = b"\n" + payload  # after a torn last line (a crash), start on a line of our own
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
