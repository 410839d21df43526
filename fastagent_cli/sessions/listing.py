"""The stored sessions of a directory, newest first: id, name, times, message count, first prompt.

Listing answers for every record at once, so it must not read every byte every call (1 000
sessions are about 80 MB). :class:`SessionIndex` keeps, per file, its summary and the offset just
past the last complete line it has read; each call ``stat``s every file and reads only what was
appended since (a replaced or shortened file is read again from the start). An append is seen by
the very next call: the answer is never stale, and the work is proportional to what changed.

Reading a file is a byte scan, not a JSON parse of every line: entry lines start with
``{"type":"<type>"`` in files written by pi and by this package, so message lines are counted by
that prefix, and only the lines that matter (the header, ``session_info``, the first user message)
are parsed. A chunk with a line in another key order is parsed line by line instead.

The index is kept in ``.index.json`` beside the records too, so a restarted process starts warm: an
entry is trusted only for a file with the same device and inode, and read on from its offset like
any other. It is rewritten at once when a file was scanned from the start (or went away), and at
most every :data:`SAVE_INTERVAL_S` for appends, which a restart reads again from the kept offsets
anyway.

It is blocking file IO: run it in a worker thread (:func:`asyncio.to_thread`) from the event loop.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from fastagent_cli.errors import SessionError, one_line
from fastagent_cli.messages import message_text
from fastagent_cli.sessions.layout import caller_id
from fastagent_cli.state.atomic import FILE_MODE, read_json

__all__ = ["NO_PROMPT", "SessionIndex", "SessionSummary", "list_sessions", "parse_iso_ms", "summarize"]

NO_PROMPT = "(no prompt yet)"
PREVIEW_CHARS = 60
_LINE_START = b'\n{"type":"'
_MESSAGE = b'\n{"type":"message",'
_SESSION_INFO = b'\n{"type":"session_info",'
_USER_ROLE = b'"role":"user"'
INDEX_FILE = ".index.json"
SAVE_INTERVAL_S = 30.0
_INDEX_VERSION = 1


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session: str
    """The caller's id (the header's id, decoded)."""
    path: Path | None
    """The record file (``None`` for an in-memory record)."""
    first_prompt: str
    """The first user message on one line, at most 60 characters, or ``(no prompt yet)``."""
    modified: float
    """When the record was last written (seconds since the epoch)."""
    created: float = 0.0
    """When the record was created (the header's timestamp, seconds since the epoch)."""
    message_count: int = 0
    """``message`` entries in the record (every branch)."""
    name: str | None = None
    """The latest non-empty ``session_info`` name."""

    @property
    def preview(self) -> str | None:
        return None if self.first_prompt == NO_PROMPT else self.first_prompt


def summarize(
    session: str,
    path: Path | None,
    first: str,
    modified: float,
    *,
    created: float = 0.0,
    message_count: int = 0,
    name: str | None = None,
) -> SessionSummary:
    preview = one_line(first, PREVIEW_CHARS) if first else NO_PROMPT
    return SessionSummary(session, path, preview, modified, created, message_count, name)


def parse_iso_ms(value: Any) -> int | None:
    """Unix milliseconds of an ISO timestamp (``...Z``), ``None`` if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


@dataclass(slots=True)
class _Scan:
    """What is known about one file, up to ``offset``."""

    device: int
    inode: int
    mtime_ns: int
    offset: int = 0
    session: str | None = None
    created: float = 0.0
    first_prompt: str | None = None
    messages: int = 0
    name: str | None = None
    valid: bool = True
    cwd: str | None = None
    """The workspace the header names (normalised)."""

    def summary(self, path: Path, modified: float) -> SessionSummary:
        assert self.session is not None
        return summarize(
            self.session,
            path,
            self.first_prompt or "",
            modified,
            created=self.created,
            message_count=self.messages,
            name=self.name,
        )


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _line_at(data: bytes, position: int) -> bytes:
    start = data.rfind(b"\n", 0, position) + 1
    end = data.find(b"\n", position)
    return data[start : len(data) if end < 0 else end]


def _read_header(scan: _Scan, path: Path, data: bytes, spec: bool) -> int:
    """Parse the header line (``spec``: a record of the spec's layout); the offset after it (0:
    not a record)."""
    end = data.find(b"\n")
    if end < 0:
        return 0
    header = _loads(data[:end])
    if header is None or header.get("type") != "session":
        scan.valid = False
        return end + 1
    scan.session = caller_id(header, spec=spec)
    cwd = header.get("cwd")
    scan.cwd = os.path.normpath(cwd) if isinstance(cwd, str) and cwd else None
    if scan.session is None:
        scan.valid = False
        return end + 1
    created = parse_iso_ms(header.get("timestamp"))
    scan.created = created / 1000 if created is not None else 0.0
    return end + 1


def _scan_lines(scan: _Scan, data: bytes) -> None:
    """Fold complete entry lines (each preceded by ``\\n``) into ``scan``."""
    if data.count(b"\n") != data.count(_LINE_START):  # a line in another key order: parse them all
        for raw in data.split(b"\n"):
            entry = _loads(raw) if raw.strip() else None
            if entry is not None:
                _fold(scan, entry)
        return
    scan.messages += data.count(_MESSAGE)
    position = data.find(_SESSION_INFO)
    while position >= 0:
        entry = _loads(_line_at(data, position + 1))
        if entry is not None:
            _fold_name(scan, entry)
        position = data.find(_SESSION_INFO, position + 1)
    position = data.find(_USER_ROLE) if scan.first_prompt is None else -1
    while position >= 0 and scan.first_prompt is None:
        entry = _loads(_line_at(data, position))
        message = entry.get("message") if entry is not None and entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "user":
            scan.first_prompt = message_text(message)
        position = data.find(_USER_ROLE, position + 1)


def _fold(scan: _Scan, entry: dict[str, Any]) -> None:
    if entry.get("type") == "message":
        scan.messages += 1
        message = entry.get("message")
        if scan.first_prompt is None and isinstance(message, dict) and message.get("role") == "user":
            scan.first_prompt = message_text(message)
    _fold_name(scan, entry)


def _fold_name(scan: _Scan, entry: dict[str, Any]) -> None:
    if entry.get("type") == "session_info":
        name = entry.get("name")
        if isinstance(name, str) and name.strip():
            scan.name = name.strip()


class SessionIndex:
    """Incremental summaries of the ``*.jsonl`` records in one directory (thread-safe);
    ``persist`` keeps them in ``.index.json`` across processes; ``spec``: a directory of the
    spec's layout, whose records are listed only for the workspace ``cwd`` (their header's)."""

    def __init__(
        self, directory: Path, *, persist: bool = False, spec: bool = False, cwd: str | None = None
    ) -> None:
        self.directory = directory
        self.persist = persist
        self.spec = spec
        self.cwd = os.path.normpath(cwd) if cwd is not None else None
        self._scans: dict[str, _Scan] = {}
        self._summaries: dict[str, tuple[tuple[int, int, int], SessionSummary]] = {}
        """The last summary of each file and the (inode, size, mtime) it was made for."""
        self._lock = threading.Lock()
        self._loaded = not persist
        self._rescanned = False
        """A file was scanned from its start, or went away: worth saving now."""
        self._grew = False
        """Only appends were read: saved at most every SAVE_INTERVAL_S."""
        self._saved_at = 0.0

    def _load(self) -> None:
        self._loaded = True
        with contextlib.suppress(OSError, ValueError):
            doc = read_json(self.directory / INDEX_FILE)
            if isinstance(doc, dict) and doc.get("version") == _INDEX_VERSION:
                names = {f.name for f in fields(_Scan)}
                for name, raw in (doc.get("files") or {}).items():
                    if isinstance(raw, dict) and set(raw) == names:
                        with contextlib.suppress(TypeError):
                            self._scans[name] = _Scan(**raw)

    def _save(self) -> None:
        """Replace the kept index (no fsync: it is a cache, and a lost or torn one is ignored)."""
        self._rescanned = self._grew = False
        self._saved_at = time.monotonic()
        doc = {"version": _INDEX_VERSION, "files": {name: asdict(s) for name, s in self._scans.items()}}
        target = self.directory / INDEX_FILE
        tmp = target.with_name(f"{INDEX_FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
            with open(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(doc, separators=(",", ":")))
            os.replace(tmp, target)
        except OSError:  # a read-only directory only costs speed
            with contextlib.suppress(OSError):
                tmp.unlink()

    def list(self, limit: int | None = 30) -> builtins.list[SessionSummary]:
        """Every record, most recently written first. SessionError when the directory exists but
        cannot be read; a missing directory holds no sessions."""
        with self._lock:
            if not self._loaded:
                self._load()
            try:
                found = self._refresh()
            except FileNotFoundError:
                self._scans.clear()
                return []
            except OSError as exc:
                raise SessionError(
                    f"cannot list sessions in {self.directory}: {exc.strerror or exc}"
                ) from exc
            due = self._grew and time.monotonic() - self._saved_at >= SAVE_INTERVAL_S
            if self.persist and (self._rescanned or due):
                self._save()
        found.sort(key=lambda s: s.modified, reverse=True)
        return found if limit is None else found[:limit]

    def forget(self, path: Path) -> None:
        with self._lock:
            self._scans.pop(path.name, None)
            self._summaries.pop(path.name, None)

    def _refresh(self) -> builtins.list[SessionSummary]:
        found: builtins.list[SessionSummary] = []
        seen: set[str] = set()
        with os.scandir(self.directory) as entries:
            for dirent in entries:
                name = dirent.name
                if name.startswith(".") or not name.endswith(".jsonl"):
                    continue
                try:
                    st = dirent.stat()
                except FileNotFoundError:
                    continue  # deleted while listing
                seen.add(name)
                scan = self._scans.get(name)
                if (
                    scan is None
                    or (scan.device, scan.inode) != (st.st_dev, st.st_ino)
                    or st.st_size < scan.offset
                    or (st.st_size == scan.offset and st.st_mtime_ns != scan.mtime_ns)
                ):
                    scan = _Scan(st.st_dev, st.st_ino, st.st_mtime_ns)
                    self._scans[name] = scan
                    self._rescanned = True
                if st.st_size > scan.offset:
                    try:
                        self._read(scan, Path(dirent.path))
                    except FileNotFoundError:
                        continue
                    self._grew = True
                if scan.mtime_ns != st.st_mtime_ns:
                    scan.mtime_ns = st.st_mtime_ns
                    self._grew = True
                if scan.valid and scan.session is not None and self.cwd in (None, scan.cwd):
                    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
                    made = self._summaries.get(name)
                    if made is None or made[0] != stamp:
                        made = (stamp, scan.summary(Path(dirent.path), st.st_mtime))
                        self._summaries[name] = made
                    found.append(made[1])
        for gone in set(self._scans) - seen:
            del self._scans[gone]
            self._summaries.pop(gone, None)
            self._rescanned = True
        return found

    def _read(self, scan: _Scan, path: Path) -> None:
        with open(path, "rb") as fh:
            fh.seek(scan.offset)
            data = fh.read()
        complete = data.rfind(b"\n") + 1  # a last line without its newline is not finished yet
        if complete == 0:
            return
        body = data[:complete]
        start = 0
        if scan.offset == 0:
            start = _read_header(scan, path, body, self.spec)
            if not scan.valid or start == 0:
                scan.offset = complete
                return
        # every entry line is preceded by a newline: include the one before the first
        _scan_lines(scan, body[start - 1 : complete - 1] if start else b"\n" + body[: complete - 1])
        scan.offset += complete


def list_sessions(directory: Path, limit: int | None = 30) -> list[SessionSummary]:
    """One listing of ``directory`` without an index to keep (a store keeps its own)."""
    return SessionIndex(directory).list(limit)
