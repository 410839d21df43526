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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
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
from fastagent_cli.state.atomic import dumps_line, make_private_dir
from fastagent_cli.state.group_sync import stage_files
from fastagent_cli.state.locks import FileLock, LockTimeoutError

__all__ = ["Publication", "RecordFiles"]

Lease = Callable[[str], Callable[[], None] | None]


@dataclass(frozen=True, slots=True)
class Publication:
    """One record to publish: ``header``, then ``body`` (whole JSONL lines); ``fresh``: a session
    that has a record already is an error rather than that record."""

    session: str
    header: dict[str, Any]
    body: bytes = b""
    fresh: bool = False


_PENDING: Exception = Exception("not linked yet")


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
        outcome = self.publish_many([Publication(session, header, body, fresh)])[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def publish_many(self, batch: Sequence[Publication]) -> list[tuple[Path, bool] | Exception]:
        """:meth:`publish` for each of ``batch`` (what a group of creators asked at once), each
        outcome in its place: the records staged one by one, then linked under one hold of the
        creation lock (a thousand sessions starting at once take the lock once, not a thousand
        times). One publication's failure is its own outcome, never the others'."""
        paths = [self.own / spec_record_name(stamp_of(item.header, 0.0), item.session) for item in batch]
        data = [
            (dumps_line({**item.header, "id": spec_id(item.session)}) + "\n").encode("utf-8") + item.body
            for item in batch  # the id's spelling is this layout's
        ]
        outcomes: list[tuple[Path, bool] | Exception] = []
        staged: list[tuple[int, Path, Path]] = []
        for i, temp in enumerate(self._stage(paths, data)):
            if isinstance(temp, OSError):
                outcomes.append(store_error("write", temp, self.own))
            else:
                outcomes.append(_PENDING)
                staged.append((i, paths[i], temp))
        if not staged:
            return outcomes
        try:
            with self._creating(batch[staged[0][0]].session):
                self._link_all(batch, staged, outcomes)
        except Exception as exc:  # the lock, the counter: every staged one not linked fails with it
            for i, path, _ in staged:
                if outcomes[i] is _PENDING:
                    outcomes[i] = store_error("write", exc, path) if isinstance(exc, OSError) else exc
        finally:
            for _, _, temp in staged:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
        return outcomes

    def _link_all(
        self,
        batch: Sequence[Publication],
        staged: list[tuple[int, Path, Path]],
        outcomes: list[tuple[Path, bool] | Exception],
    ) -> None:
        """Under the creation lock: each staged record linked into place unless its session has a
        record already. The counter is read once and moved once, by the number of records about
        to be linked, before the first link (killed between the two, the others list once for
        nothing; the other way round they could trust a listing without the record)."""
        generation = _generation(self._counter)
        new: list[tuple[int, Path, Path]] = []
        taken: dict[str, Path] = {}  # a session asked for twice in the group gets one record
        for i, path, temp in staged:
            item = batch[i]
            existing = taken.get(item.session) or self._find(item.session, generation)
            if existing is None:
                new.append((i, path, temp))
                taken[item.session] = path
            elif item.fresh:
                outcomes[i] = SessionError(f"session {item.session!r} exists already ({existing})")
            else:
                outcomes[i] = (existing, False)
        if not new:
            return
        moved = generation + len(new)
        _set_generation(self._counter, moved)
        linked: list[tuple[str, Path]] = []
        for i, path, temp in new:
            try:
                try:
                    os.link(temp, path)
                except FileNotFoundError:  # the directory went away since it was made
                    make_private_dir(self.own)
                    os.link(temp, path)
            except OSError as exc:
                outcomes[i] = store_error("write", exc, path)
                continue
            outcomes[i] = (path, True)
            linked.append((batch[i].session, path))
        self.own_index.published_many(linked, moved)
        self.index.advanced(moved, len(new))

    def _stage(self, paths: list[Path], data: list[bytes]) -> list[Path | OSError]:
        """Each record's ``data`` written in ``.staging/`` and made durable (one ``syncfs`` for a
        large group, see :mod:`~fastagent_cli.state.group_sync`); the directories are made on the
        first publish (and again when one was removed since), not checked on every one."""
        if not self._made:
            make_private_dir(self.own)
            make_private_dir(self.staging)
            self._made = True
        temps = [self.staging / path.name for path in paths]
        out = stage_files(temps, data, mode=0o600)
        if any(isinstance(o, FileNotFoundError) for o in out):  # a directory removed meanwhile
            make_private_dir(self.own)
            make_private_dir(self.staging)
            again = [i for i, o in enumerate(out) if isinstance(o, FileNotFoundError)]
            for i, o in zip(
                again,
                stage_files([temps[i] for i in again], [data[i] for i in again], mode=0o600),
                strict=True,
            ):
                out[i] = o
        return out

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
