"""Records from elsewhere: found in a file or a directory, and prepared to be stored here.

A source is a record file, a directory of records (one workspace's), or a directory of such
directories: a sessions directory (its ``agent-session/``, the spec's layout, and its
``--<workspace>--/`` directories, 0.18's), pi's ``~/.pi/agent/sessions``, the original's
``<state>/sessions``; flat-layout records (``s*.jsonl``) count too. A record's caller id is decoded
by the layout of the directory it is in (:func:`_spec_spelling`). Only first lines are read to
find them. :func:`prepared` turns one into the header and body a store keeps for it:

* the header is pi's, for the id it is stored under and this workspace; the creation time is
  kept; ``parentSession`` keeps the source's (same id) or names the source file (a new id, as
  pi's ``forkFrom`` does);
* the entries are kept byte for byte, except that an unfinished last line (a writer died mid-line)
  is left out, and version 1 and 2 records are upgraded to version 3 the way pi upgrades them
  (entries chained with fresh ids, ``firstKeptEntryIndex`` -> ``firstKeptEntryId``,
  ``hookMessage`` -> ``custom``).
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.layout import OWN_RECORDS_DIR, caller_id, decode_spec_id, spec_id
from fastagent_cli.sessions.record import SESSION_VERSION, iso_now
from fastagent_cli.state.atomic import dumps_line, parse_jsonl

__all__ = ["ForeignRecord", "find_records", "prepared", "read_foreign"]

_HEADER_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class ForeignRecord:
    path: Path
    header: dict[str, Any]
    session: str
    """The caller's id the record was kept under (a pi session's UUID)."""
    modified: float


def read_foreign(path: Path) -> ForeignRecord | None:
    """The record at ``path`` (only its first line is read); ``None`` when it is not one."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(_HEADER_BYTES)
            modified = os.fstat(fh.fileno()).st_mtime
        header = json.loads(first)
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("type") != "session":
        return None
    session = caller_id(header, spec=_spec_spelling(path, header))
    return None if session is None else ForeignRecord(path, header, session, modified)


def _spec_spelling(path: Path, header: dict[str, Any]) -> bool:
    """Whether the header's id is in the spec's spelling: by the directory the record is in
    (``agent-session/``: yes; ``--<workspace>--/``: no, 0.18's); a file elsewhere (an export, say)
    is read as the spec's when its id is one, as every record written now is (a 0.18 id that is
    also one, such as ``s42``, needs ``--as``)."""
    parent = path.parent.name
    if parent == OWN_RECORDS_DIR:
        return True
    if parent.startswith("--") and parent.endswith("--"):
        return False
    ident = header.get("id")
    return isinstance(ident, str) and decode_spec_id(ident) is not None


def find_records(source: Path) -> list[ForeignRecord]:
    """The records in ``source``, most recently written first. SessionError when ``source`` is a
    file that is not a record, or cannot be read."""
    if source.is_file():
        found = read_foreign(source)
        if found is None:
            raise SessionError(f"{source} is not a session file (its first line is no session header)")
        return [found]
    try:
        files = _jsonl_files(source)
    except OSError as exc:
        raise SessionError(f"cannot read {source}: {exc.strerror or exc}") from exc
    records = [r for r in map(read_foreign, files) if r is not None]
    records.sort(key=lambda r: r.modified, reverse=True)
    return records


def _jsonl_files(directory: Path) -> list[Path]:
    files: list[Path] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                with os.scandir(entry.path) as inner:
                    files += [Path(e.path) for e in inner if _is_jsonl(e)]
            elif _is_jsonl(entry):
                files.append(Path(entry.path))
    return files


def _is_jsonl(entry: os.DirEntry[str]) -> bool:
    return entry.name.endswith(".jsonl") and not entry.name.startswith(".") and entry.is_file()


def prepared(record: ForeignRecord, session: str, cwd: str) -> tuple[dict[str, Any], bytes]:
    """The header and body to store ``record`` under ``session`` for the workspace ``cwd``."""
    try:
        data = record.path.read_bytes()
    except OSError as exc:
        raise SessionError(f"cannot read {record.path}: {exc.strerror or exc}") from exc
    _, _, body = data.partition(b"\n")
    body = body[: body.rfind(b"\n") + 1]  # an unfinished last line is no entry yet
    old = record.header
    version = old.get("version", 1)
    if version not in (1, 2, SESSION_VERSION):
        raise SessionError(f"{record.path} is a version {version} session file; this reads versions 1 to 3")
    if version != SESSION_VERSION:
        body = "".join(dumps_line(e) + "\n" for e in _upgraded(parse_jsonl(body), version)).encode("utf-8")
    stamp = old.get("timestamp")
    header: dict[str, Any] = {
        "type": "session",
        "version": SESSION_VERSION,
        "id": spec_id(session),
        "timestamp": stamp if isinstance(stamp, str) else iso_now(),
        "cwd": cwd,
    }
    if session == record.session:
        if isinstance(old.get("parentSession"), str):
            header["parentSession"] = old["parentSession"]
    else:
        header["parentSession"] = str(record.path)
    kept = ("type", "version", "id", "timestamp", "cwd", "parentSession", "fastagentSession")
    header.update((k, v) for k, v in old.items() if k not in kept)
    return header, body


def _upgraded(entries: list[dict[str, Any]], version: int) -> list[dict[str, Any]]:
    """pi's v1 -> v2 -> v3 migration (``session-manager.ts``), on the entries after the header."""
    if version < 2:
        used: set[str] = set()
        previous: str | None = None
        for entry in entries:
            entry_id = _short_id(used)
            entry["id"], entry["parentId"] = entry_id, previous
            previous = entry_id
        for entry in entries:
            index = entry.pop("firstKeptEntryIndex", None) if entry.get("type") == "compaction" else None
            if isinstance(index, int) and 1 <= index <= len(entries):  # counted with the header as 0
                entry["firstKeptEntryId"] = entries[index - 1]["id"]
    for entry in entries:
        message = entry.get("message")
        if (
            entry.get("type") == "message"
            and isinstance(message, dict)
            and message.get("role") == "hookMessage"
        ):
            message["role"] = "custom"
    return entries


def _short_id(used: set[str]) -> str:
    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if candidate not in used:
            used.add(candidate)
            return candidate
    return str(uuid.uuid4())
