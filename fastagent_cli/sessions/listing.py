"""The stored sessions of a directory, newest first, each with its first prompt and age.

Listing is the only place that scans the sessions directory; it reads each record only up to its
first user message (the header is line one), so it stays cheap for long sessions. It is blocking
file IO: run it in a worker thread (:func:`asyncio.to_thread`) from the event loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli.errors import one_line
from fastagent_cli.messages import message_text
from fastagent_cli.sessions.encoding import decode_session_id

__all__ = ["NO_PROMPT", "SessionSummary", "list_sessions", "summarize"]

NO_PROMPT = "(no prompt yet)"
PREVIEW_CHARS = 60
_MAX_SCAN_LINES = 200
"""Stop looking for the first user message after this many lines (inherited or odd records)."""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session: str
    """The caller's id (from the header; decoded from the file name for older records)."""
    path: Path | None
    """The record file (``None`` for an in-memory record)."""
    first_prompt: str
    """The first user message on one line, at most 60 characters, or ``(no prompt yet)``."""
    modified: float
    """When the record was last written (seconds since the epoch)."""


def summarize(session: str, path: Path | None, first: str, modified: float) -> SessionSummary:
    return SessionSummary(session, path, one_line(first, PREVIEW_CHARS) if first else NO_PROMPT, modified)


def _summary(path: Path) -> SessionSummary | None:
    try:
        modified = path.stat().st_mtime
        with open(path, encoding="utf-8", errors="replace") as fh:
            header = json.loads(fh.readline() or "null")
            if not isinstance(header, dict) or header.get("type") != "session":
                return None
            session = header.get("fastagentSession")
            if not isinstance(session, str):
                session = decode_session_id(path.stem) or path.stem
            first = ""
            for _, line in zip(range(_MAX_SCAN_LINES), fh, strict=False):
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line
                message = entry.get("message") if isinstance(entry, dict) else None
                if isinstance(message, dict) and message.get("role") == "user":
                    first = message_text(message)
                    break
    except (OSError, json.JSONDecodeError):
        return None
    return summarize(session, path, first, modified)


def list_sessions(directory: Path, limit: int | None = 30) -> list[SessionSummary]:
    """Sessions in ``directory``, most recently written first (unreadable files are skipped)."""
    if not directory.is_dir():
        return []
    found = [s for p in directory.glob("s*.jsonl") if (s := _summary(p)) is not None]
    found.sort(key=lambda s: s.modified, reverse=True)
    return found if limit is None else found[:limit]
