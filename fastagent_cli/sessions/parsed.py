"""Parsed session files, read incrementally.

A record is append-only JSONL, so once a file has been parsed only the bytes appended since need
reading: the cache remembers, per path, the inode and the offset just past the last complete line,
and the next read parses from there. Every read starts with a ``stat``, so appends by another
process are seen at once, and a replaced or shortened file is parsed again from the start. Only
the most recently used files are kept, within ``max_bytes`` of JSONL (parsed lines take a few times
that in memory); a file larger than the budget is simply parsed whole each time.

A caller can :meth:`~ParsedFiles.attach` what it derived from a file's lines (the session
store keeps the record index and context it built), so that it shares their lifetime.

A complete line that is not a JSON object (a corrupt *middle* line: a torn last line is never
read before it is finished) is skipped with a warning naming the file and the line; the record
chains the entries after it to the ones before (see :class:`~.record.SessionRecord`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastagent_cli.state.atomic import parse_jsonl

__all__ = ["ParsedFiles"]

log = logging.getLogger("fastagent.sessions")


@dataclass(slots=True)
class _Parsed:
    device: int
    inode: int
    offset: int = 0
    line_count: int = 0
    lines: list[dict[str, Any]] = field(default_factory=list)
    attached: Any = None


class ParsedFiles:
    def __init__(self, max_bytes: int = 4 << 20) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Path, _Parsed] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def pending_bytes(self, path: Path) -> int:
        """How much a :meth:`read` would parse now (to decide whether to read off the loop)."""
        size = path.stat().st_size
        with self._lock:
            cached = self._items.get(path)
        return size - cached.offset if cached is not None and cached.offset <= size else size

    def read(self, path: Path) -> list[dict[str, Any]]:
        """The file's JSON objects (blank, malformed and torn lines skipped), as a new list."""
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            with self._lock:
                cached = self._items.get(path)
            if (
                cached is None
                or (cached.device, cached.inode) != (st.st_dev, st.st_ino)
                or st.st_size < cached.offset
            ):
                cached = _Parsed(st.st_dev, st.st_ino)
            fh.seek(cached.offset)
            data = fh.read()
        complete = data.rfind(b"\n") + 1  # a last line without its newline is not finished yet
        bad: list[int] = []
        fresh = parse_jsonl(data[:complete], bad, first_line=cached.line_count + 1)
        for number in bad:
            log.warning(
                "[sessions] %s: line %d is not a JSON object; skipped (the entries around it are kept)",
                path,
                number,
            )
        with self._lock:
            cached.line_count += data.count(b"\n", 0, complete)
            cached.lines.extend(fresh)
            previous = self._items.pop(path, None)
            self._bytes -= previous.offset if previous is not None else 0
            cached.offset += complete
            self._items[path] = cached
            self._bytes += cached.offset
            while self._bytes > self.max_bytes and self._items:
                _, evicted = self._items.popitem(last=False)
                self._bytes -= evicted.offset
            return list(cached.lines)

    def attach(self, path: Path, value: Any) -> None:
        """Keep ``value`` with the file's cached lines: it goes when they go (evicted, or the
        file replaced and parsed anew)."""
        with self._lock:
            cached = self._items.get(path)
            if cached is not None:
                cached.attached = value

    def attached(self, path: Path) -> Any:
        """What :meth:`attach` left with the file's cached lines (``None`` when nothing)."""
        with self._lock:
            cached = self._items.get(path)
            return None if cached is None else cached.attached

    def forget(self, path: Path) -> None:
        with self._lock:
            evicted = self._items.pop(path, None)
            self._bytes -= evicted.offset if evicted is not None else 0

    @property
    def cached_bytes(self) -> int:
        return self._bytes
