"""The record files of one workspace in a sessions directory, in pi's layout.

:class:`RecordFiles` is what the file store asks where a session's record is and how a new one is
published (naming in :mod:`~fastagent_cli.sessions.layout`, lookup in
:mod:`~fastagent_cli.sessions.index`):

* new records are published in the spec's layout, ``<sessions dir>/agent-session/`` (created
  0700, files 0600), the directory every workspace shares, told apart by the header's ``cwd``;
* records of the older layout, ``<sessions dir>/--<workspace>--/`` (the original 0.18's and this
  package's before), are found and continued where they are, never moved (a 0.18 original reads
  them back); an id with a record in both resolves to the spec's, as the original resolves it;
* a new record is published complete (written to a temp file, fsynced, hard-linked into place)
  under ``.locks/create.lock``, whose generation counter (``.locks/create.generation``) tells the
  creator whether another process created records since it last listed the directory: two
  processes creating one session at once publish one record, an id that has one never gets a
  second, and a creation lists nothing when nobody else created meanwhile;
* records of the flat layout found in the sessions directory are moved in when the files are
  first opened (:mod:`~fastagent_cli.sessions.migrate`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.index import RecordIndex, header_cwd
from fastagent_cli.sessions.layout import (
    OWN_RECORDS_DIR,
    spec_id,
    spec_record_name,
    stamp_of,
    workspace_dirname,
)
from fastagent_cli.sessions.migrate import migrate_flat_records
from fastagent_cli.sessions.store_errors import store_error
from fastagent_cli.state.atomic import dumps_line, make_private_dir, stage_file
from fastagent_cli.state.locks import FileLock, LockTimeoutError

__all__ = ["RecordFiles"]

Lease = Callable[[str], Callable[[], None] | None]


class RecordFiles:
    def __init__(self, root: Path, cwd: str, lease: Lease) -> None:
        if root.exists() and not root.is_dir():
            raise SessionError(f"the sessions directory {root} is a file, not a directory")
        self.root = root
        self.own = root / OWN_RECORDS_DIR
        """Where new records are published (the spec's layout)."""
        self.directory = root / workspace_dirname(cwd)
        """This workspace's records of the older layout (0.18's)."""
        self.own_index = RecordIndex(self.own, spec=True, cwd=cwd)
        self.index = RecordIndex(self.directory)
        self._counter = root / ".locks" / "create.generation"
        self._threads = threading.Lock()
        self.staging = root / ".staging"
        self._made = False
        self.migration = migrate_flat_records(root, self.directory, lease)

    def find(self, session: str) -> Path | None:
        """The record file of ``session`` (``None`` when it has none)."""
        return self._find(session)

    def _find(self, session: str, generation: int | None = None) -> Path | None:
        return self.own_index.find(session, generation) or self.index.find(session, generation)

    def forget(self, path: Path) -> None:
        (self.own_index if path.parent == self.own else self.index).forget(path)

    def publish(
        self, session: str, header: dict[str, Any], body: bytes = b"", *, fresh: bool = False
    ) -> tuple[Path, bool]:
        """Publish a record (``header``, then ``body``: whole JSONL lines) unless ``session`` has
        one: the record's path, and whether this call created it. ``fresh``: an existing record is
        a SessionError.

        The record is written and fsynced first, in ``.staging/`` (so the workspace directory
        changes only by the link); only the check and the link are made under the creation lock,
        so creators wait on each other for a few system calls, not a disk flush. (The directory is
        not fsynced after the link, as appends are not: a turn's first request waits for one
        flush, not two.)"""
        path = self.own / spec_record_name(stamp_of(header, 0.0), session)
        header = {**header, "id": spec_id(session)}  # the spelling is this layout's
        data = (dumps_line(header) + "\n").encode("utf-8") + body
        try:
            staged = self._stage(path.name, data)
        except OSError as exc:
            raise store_error("write", exc, self.own) from exc
        try:
            with self._creating(session):
                generation = _generation(self._counter)
                existing = self._find(session, generation)
                if existing is not None:
                    if fresh:
                        raise SessionError(f"session {session!r} exists already ({existing})")
                    return existing, False
                # The counter moves first: killed between the two, the others list once for
                # nothing; the other way round they could trust a listing without the record.
                _set_generation(self._counter, generation + 1)
                try:
                    os.link(staged, path)
                except FileNotFoundError:  # the directory went away since it was made
                    make_private_dir(self.own)
                    os.link(staged, path)
                self.own_index.published(session, path, generation + 1)
                self.index.advanced(generation + 1)
        except OSError as exc:
            raise store_error("write", exc, path) from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(staged)
        return path, True

    def _stage(self, name: str, data: bytes) -> Path:
        """``data`` written and fsynced in ``.staging/``; the directories are made on the first
        publish (and again when one was removed since), not checked on every one."""
        if not self._made:
            make_private_dir(self.own)
            make_private_dir(self.staging)
            self._made = True
        try:
            return stage_file(self.staging / name, data, mode=0o600)
        except FileNotFoundError:
            make_private_dir(self.own)
            make_private_dir(self.staging)
            return stage_file(self.staging / name, data, mode=0o600)

    @contextlib.contextmanager
    def _creating(self, session: str) -> Iterator[None]:
        """The creation lock: this process's threads queue on a mutex, processes on the file."""
        with self._threads:
            lock = FileLock(self.root / ".locks" / "create.lock", timeout=30.0)
            try:
                lock.acquire()
            except LockTimeoutError:
                raise SessionError(f"cannot create session {session!r}: {lock.path} stays locked") from None
            try:
                yield
            finally:
                lock.release()

    def paths(self) -> list[Path]:
        """Every record file of the workspace, in both layouts (never per turn)."""
        own = [path for path in _jsonl(self.own) if header_cwd(path) in (None, self.own_index.cwd)]
        return own + _jsonl(self.directory)


def _jsonl(directory: Path) -> list[Path]:
    try:
        with os.scandir(directory) as entries:
            names = [e.name for e in entries if e.name.endswith(".jsonl") and not e.name.startswith(".")]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise store_error("read", exc, directory) from exc
    return sorted(directory / name for name in names)


def _generation(path: Path) -> int:
    """How many records were created under the creation lock (read while holding it)."""
    try:
        return int(path.read_bytes() or b"0")
    except FileNotFoundError:
        return 0
    except ValueError:
        return -1  # unreadable: every index lists again, and the next creation rewrites it


_COUNTER_WIDTH = 20
"""Digits of the counter as written: every value is the same length, so a rewrite in place
leaves no trace of the one before."""


def _set_generation(path: Path, value: int) -> None:
    """Write the counter in place: one ``pwrite`` of a fixed-width value (``%020d\\n``) over the
    old one, never a truncation. A truncate and rewrite makes ext4 flush the file on close (its
    ``auto_da_alloc`` guard against a zero-length file after a crash): 0.16 ms under the creation
    lock for every new session, against 5 us for this.

    Torn writes: readers hold the creation lock, so none sees a write in progress, and a process
    killed mid-call leaves the ``pwrite`` done or not done (it is one system call of 21 bytes at
    offset 0, inside one sector). So the value read is always one that was written: the old one
    (a creation killed before it: the others list once more, harmless) or the new one; the
    truncating write it replaces could leave an empty file, read as 0, which other processes may
    have seen already. After a power loss no process keeps a listing, so a stale value there can
    mislead nobody; a value that cannot be read is -1 and makes everyone list again. Counters
    written by an older version (no padding) parse the same, and theirs parse ours."""
    data = b"%0*d\n" % (_COUNTER_WIDTH, value)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, data, 0)
        if os.fstat(fd).st_size > len(data):  # longer than ours (never written by this version)
            os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
