"""Crash-safe file writes.

* A JSON document is replaced atomically: write a temp file in the same directory, fsync it,
  rename it over the target, fsync the directory.
* A secret (``write_private_json``) is written 0600 in a 0700 directory.
* A JSONL record is appended as one whole line with one ``write`` on an ``O_APPEND`` descriptor,
  so a crash leaves at most a torn *last* line, which :func:`read_jsonl` ignores; the next append
  starts on a line of its own instead of gluing a record onto it. An append that fails part way
  (a full disk) is truncated back, so it leaves no partial line either.
* State is private from the moment it exists: files are created 0600 (unless a caller asks for
  another mode) and every directory these helpers create is created 0700
  (:func:`make_private_dir`), so there is never a moment another local user could read it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fastagent_cli.contract import json_text

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "append_jsonl",
    "atomic_write_json",
    "atomic_write_text",
    "dumps_line",
    "fsync_dir",
    "make_private_dir",
    "parse_jsonl",
    "publish_file",
    "read_json",
    "read_jsonl",
    "remove_file",
    "stage_file",
    "write_private_json",
]


FILE_MODE = 0o600
DIR_MODE = 0o700


def make_private_dir(path: str | os.PathLike[str]) -> None:
    """Create ``path`` and any missing parents with mode 0700 (existing ones are left as they are)."""
    target = Path(path)
    missing: list[Path] = []
    while not target.is_dir():
        missing.append(target)
        if target.parent == target:
            break
        target = target.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(directory)) from None


def dumps_line(obj: Any) -> str:
    """Compact JSON as pi writes it: no spaces, non-ASCII kept, one line; a lone surrogate is
    written as its ``\\udXXX`` escape, so every line encodes as UTF-8 and reads back equal."""
    return json_text(obj)


def atomic_write_text(path: str | os.PathLike[str], text: str, *, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``text`` so readers see the old or the new file, never a mix."""
    target = Path(path)
    make_private_dir(target.parent)
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


def atomic_write_json(path: str | os.PathLike[str], obj: Any, *, mode: int = FILE_MODE) -> None:
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
    fd = os.open(path, os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0), FILE_MODE)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            payload = b"\n" + payload  # after a torn last line (a crash), start on a line of our own
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)  # a full disk took part of the lines: take them back
            raise
    finally:
        os.close(fd)


def parse_jsonl(
    data: bytes, bad_lines: list[int] | None = None, *, first_line: int = 1
) -> list[dict[str, Any]]:
    """The JSON objects of JSONL bytes, skipping blank and malformed lines (a line cut short by a
    crash is not valid JSON, so it is skipped too). The numbers of skipped non-blank lines are
    appended to ``bad_lines`` (counting ``data``'s first line as ``first_line``)."""
    out: list[dict[str, Any]] = []
    for number, raw in enumerate(data.split(b"\n"), first_line):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            out.append(obj)
        elif bad_lines is not None:
            bad_lines.append(number)
    return out


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSONL file; a torn last line is ignored."""
    with open(path, "rb") as fh:
        data = fh.read()
    yield from parse_jsonl(data)


def stage_file(path: Path, data: bytes, *, mode: int = FILE_MODE, sync: bool = True) -> Path:
    """A temp file beside ``path`` holding ``data`` (``mode``), fsynced (``sync=False``: the
    caller makes it durable, as :func:`~fastagent_cli.state.group_sync.stage_files` does for a
    group): to be linked or renamed into place, then unlinked."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def publish_file(path: Path, data: bytes, *, mode: int = FILE_MODE, replace: bool = False) -> bool:
    """Put ``data`` at ``path`` complete or not at all: a temp file (``mode``) beside it, fsynced,
    then hard-linked into place (``replace=False``: nothing is written and ``False`` returned when
    ``path`` exists, whoever made it) or renamed over it; the directory is fsynced."""
    tmp = stage_file(path, data, mode=mode)
    try:
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    fsync_dir(path.parent)
    return True


def remove_file(path: Path) -> None:
    """Unlink ``path`` and fsync its directory, so the removal survives a crash."""
    os.unlink(path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make the directory's entries (a rename, a link, an unlink) survive a crash."""
    _fsync_dir(directory)


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


def write_private_json(path: str | os.PathLike[str], obj: Any) -> None:
    """:func:`atomic_write_json` for a secret: the file 0600 in a directory made 0700 (even one
    that existed with wider permissions)."""
    target = Path(path)
    make_private_dir(target.parent)
    os.chmod(target.parent, DIR_MODE)
    atomic_write_json(target, obj, mode=FILE_MODE)
