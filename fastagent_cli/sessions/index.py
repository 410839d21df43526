"""Finding a record by its id without reading every file.

The file names of a workspace directory carry the ids (``<stamp>_<encoded id>.jsonl``), so one
listing of names maps every id to its file; no file is opened and no name is decoded. The map is
kept per process:

* a hit is used as it is (if the file went away meanwhile, the open that follows fails and the
  caller :meth:`RecordIndex.forget`\\ s it);
* a miss lists the directory again only when it may have changed since the last listing: its
  inode or mtime moved, another process created a record (the creation generation below moved),
  or the listing was taken within 2 s of a change it did not make itself (a file system with a
  coarse mtime tick could hide a second change made in the same tick).

Records are created under ``.locks/create.lock``, which also holds a generation counter that
every creation bumps; a creator that finds the counter where it left it knows its map is
complete and lists nothing. So opening an existing session costs a dict lookup, and creating one
two ``stat``\\ s and a read of the counter, whether 10 or 10 000 sessions are stored. Two records
for one id (an import next to a copy, say) resolve to the one written last.

The directory of the spec's layout (``agent-session/``) holds every workspace's records; an index
of it given a ``cwd`` keeps to the records whose header names that workspace (each file's first
line is read once per process, and never for a record this process published).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.layout import decode_id, decode_spec_id, record_key, spec_key

__all__ = ["RecordIndex", "header_cwd", "name_key"]

_SETTLE_NS = 2_000_000_000
"""A listing taken this soon after the directory's last change is not trusted to be complete."""
_STAMP = 24
"""``2026-03-15T10-00-00-000Z``: the length of a record name's creation stamp."""
_STAMP_FORM = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z")


def name_key(name: str) -> str | None:
    """The id part of a record file name (``<stamp>_<key>.jsonl``); ``None`` for other files."""
    if len(name) <= _STAMP + 7 or name[_STAMP] != "_" or not name.endswith(".jsonl"):
        return None
    return name[_STAMP + 1 : -6] if _STAMP_FORM.fullmatch(name, 0, _STAMP) else None


class RecordIndex:
    def __init__(self, directory: Path, *, spec: bool = False, cwd: str | None = None) -> None:
        """``spec``: a directory of the spec's layout, its records scoped to the workspace
        ``cwd`` (their header's)."""
        self.directory = directory
        self._key: Callable[[str], str] = spec_key if spec else record_key
        self._decode: Callable[[str], str | None] = decode_spec_id if spec else decode_id
        self.cwd = os.path.normpath(cwd) if cwd is not None else None
        self._cwds: dict[str, str | None] = {}
        """The header ``cwd`` of each file name seen (only with ``cwd``)."""
        self._files: dict[str, list[str]] = {}
        self._stamp: tuple[int, int] | None = None
        self._trusted = False
        self._generation: int | None = None
        self._lock = threading.Lock()
        self._listing = threading.Lock()
        """Held while a listing is taken and installed: a record :meth:`published` meanwhile is
        added after it, never lost under a listing taken before its link."""

    def find(self, session: str, generation: int | None = None) -> Path | None:
        """The record file of ``session``, or ``None``. ``generation``: the creation counter, read
        under the creation lock (a creator's lookup)."""
        names = self._lookup(session)
        if not names:
            self.refresh(generation)
            names = self._lookup(session)
        return _newest(self.directory, names) if names else None

    def _lookup(self, session: str) -> list[str]:
        key = self._key(session)
        with self._lock:
            names = self._files.get(key)
        if not names and key != session and self._decode(session) is None:
            with self._lock:  # a name that is no encoding stands for itself (a hand-named file)
                names = self._files.get(session)
        return [name for name in names or () if self._ours(name)]

    def _ours(self, name: str) -> bool:
        """Whether the file ``name`` belongs to this index's workspace (always without ``cwd``)."""
        if self.cwd is None:
            return True
        with self._lock:
            known = name in self._cwds
            cwd = self._cwds.get(name)
        if not known:
            cwd = header_cwd(self.directory / name)
            with self._lock:
                self._cwds[name] = cwd
        return cwd is None or cwd == self.cwd  # a damaged header is nobody's: reported, not hidden

    def refresh(self, generation: int | None = None) -> None:
        """List the directory again if it may have changed."""
        with self._listing:
            self._refresh(generation)

    def _refresh(self, generation: int | None) -> None:
        try:
            st = os.stat(self.directory)
        except FileNotFoundError:
            with self._lock:
                self._files, self._stamp, self._trusted = {}, None, False
            return
        except OSError as exc:
            raise SessionError(
                f"cannot read the session records in {self.directory}: {exc.strerror or exc}"
            ) from exc
        stamp = (st.st_ino, st.st_mtime_ns)
        with self._lock:
            current = generation is None or generation == self._generation
            if self._trusted and stamp == self._stamp and current:
                return
        files: dict[str, list[str]] = {}
        try:
            names = os.listdir(self.directory)
        except OSError as exc:
            raise SessionError(
                f"cannot read the session records in {self.directory}: {exc.strerror or exc}"
            ) from exc
        for name in names:
            key = name_key(name)
            if key is not None:
                files.setdefault(key, []).append(name)
        settled = time.time_ns() - st.st_mtime_ns > _SETTLE_NS
        with self._lock:
            self._files, self._stamp, self._trusted = files, stamp, settled
            listed = set(names)
            self._cwds = {name: cwd for name, cwd in self._cwds.items() if name in listed}
            if generation is not None:
                self._generation = generation

    def published(self, session: str, path: Path, generation: int) -> None:
        """Record a file this process just created under the creation lock (``generation``: the
        counter after it): the map stays complete without a listing."""
        self.published_many([(session, path)], generation)

    def published_many(self, records: Sequence[tuple[str, Path]], generation: int) -> None:
        """:meth:`published` for the files (session, path) this process just created under the creation lock
        (``generation``: the counter after them): the map stays complete without a listing."""
        st = os.stat(self.directory)
        with self._listing, self._lock:
            for session, path in records:
                if self.cwd is not None:
                    self._cwds[path.name] = self.cwd
                names = self._files.setdefault(self._key(session), [])
                if path.name not in names:
                    names.append(path.name)
            self._stamp, self._trusted, self._generation = (st.st_ino, st.st_mtime_ns), True, generation

    def advanced(self, generation: int, by: int = 1) -> None:
        """The creation counter moved by ``by`` to ``generation`` for records this process
        published in another directory: a listing complete at the counter before still is."""
        with self._lock:
            if self._generation == generation - by:
                self._generation = generation

    def forget(self, path: Path) -> None:
        """Drop a file that turned out to be gone; the next lookup lists the directory again."""
        with self._lock:
            for names in self._files.values():
                if path.name in names:
                    names.remove(path.name)
            self._cwds.pop(path.name, None)
            self._trusted = False


def header_cwd(path: Path) -> str | None:
    """The ``cwd`` a record's header names (``None``: none, or no readable header: a damaged
    record, which every workspace's lookup finds so that opening it reports the damage)."""
    try:
        with open(path, "rb") as fh:
            header = json.loads(fh.readline(64 * 1024))
    except (OSError, ValueError):
        return None
    cwd = header.get("cwd") if isinstance(header, dict) and header.get("type") == "session" else None
    return os.path.normpath(cwd) if isinstance(cwd, str) and cwd else None


def _newest(directory: Path, names: list[str]) -> Path:
    if len(names) == 1:
        return directory / names[0]
    stamped = []
    for name in names:
        try:
            stamped.append(((directory / name).stat().st_mtime_ns, name))
        except FileNotFoundError:
            continue
    return directory / (max(stamped)[1] if stamped else names[0])
