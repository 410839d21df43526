"""Crash-safe file writes.

* A JSON document is replaced atomically: write a temp file in the same directory, fsync it,
  rename it over the target, fsync the directory.
* A JSONL record is appended as one whole line with one ``write`` on an ``O_APPEND`` descriptor,
  so a crash leaves at most a torn *last* line, which :func:`read_jsonl` ignores; the next append
  starts on a line of its own instead of gluing a record onto it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "append_jsonl",
    "atomic_write_json",
    "atomic_write_text",
    "dumps_line",
    "parse_jsonl",
    "read_json",
    "read_jsonl",
]


def dumps_line(obj: Any) -> str:
    """Compact JSON as pi writes it: no spaces, non-ASCII kept, one line."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def atomic_write_text(path: str | os.PathLike[str], text: str, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` so readers see the old or the new file, never a mix."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        try:
            os.fchmod(fd, mode)
            data = text.encode("utf-8")
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def atomic_write_json(path: str | os.PathLike[str], obj: Any, *, mode: int = 0o644) -> None:
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=2) + "\n", mode=mode)


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; ``None`` when it does not exist."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None


def append_jsonl(
    path: str | os.PathLike[str], records: Iterable[Any], *, fsync: bool = False, create: bool = True
) -> None:
    """Append records as whole lines with a single write. ``create=False``: the file must exist
    (:class:`FileNotFoundError` otherwise)."""
    payload = "".join(dumps_line(r) + "\n" for r in records).encode("utf-8")
    if not payload:
        return
    fd = os.open(path, os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0), 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            payload = b"\n" + payload  # after a torn last line (a crash), start on a line of our own
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def parse_jsonl(data: bytes) -> list[dict[str, Any]]:
    """The JSON objects of JSONL bytes, skipping blank and malformed lines (a line cut short by a
    crash is not valid JSON, so it is skipped too)."""
    out: list[dict[str, Any]] = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSONL file; a torn last line is ignored."""
    with open(path, "rb") as fh:
        data = fh.read()
    yield from parse_jsonl(data)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
