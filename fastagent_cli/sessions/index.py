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
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.layout import decode_id, record_key

__all__ = ["RecordIndex", "name_key"]

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
    def __init__(self, directory: Path) -> None:
        self.directory = directory
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
        key = record_key(session)
        with self._lock:
            names = self._files.get(key)
        if not names and key != session and decode_id(session) is None:
            with self._lock:  # a name that is no encoding stands for itself (a hand-named file)
                names = self._files.get(session)
        return list(names or ())

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
            if generation is not None:
                self._generation = generation

    def published(self, session: str, path: Path, generation: int) -> None:
        """Record a file this process just created under the creation lock (``generation``: the
        counter after it): the map stays complete without a listing."""
        st = os.stat(self.directory)
        with self._listing, self._lock:
            names = self._files.setdefault(record_key(session), [])
            if path.name not in names:
                names.append(path.name)
            self._stamp, self._trusted, self._generation = (st.st_ino, st.st_mtime_ns), True, generation

    def forget(self, path: Path) -> None:
        """Drop a file that turned out to be gone; the next lookup lists the directory again."""
        with self._lock:
            for names in self._files.values():
                if path.name in names:
                    names.remove(path.name)
            self._trusted = False


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
