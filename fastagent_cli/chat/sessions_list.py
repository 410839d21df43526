"""This agent's sessions, newest first, with their first prompt and age (``/resume``, ``--resume``,
``--continue``).

Listing is the only place that scans the sessions directory; it reads each record only up to its
first user message (the header is line one), so it stays cheap for long sessions. Run it in a
worker thread (:func:`asyncio.to_thread`) from the event loop.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastagent_cli.sessions.encoding import decode_session_id

__all__ = ["SessionSummary", "format_age", "list_sessions", "message_text", "one_line_preview"]

_MAX_SCAN_LINES = 200
"""Stop looking for the first user message after this many lines (inherited or odd records)."""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session: str
    path: Path
    first_prompt: str
    modified: float


def message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def one_line_preview(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


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
    return SessionSummary(session, path, one_line_preview(first) if first else "(no prompt yet)", modified)


def list_sessions(directory: Path, limit: int | None = 30) -> list[SessionSummary]:
    """Sessions in ``directory``, most recently written first (unreadable files are skipped)."""
    if not directory.is_dir():
        return []
    found = [s for p in directory.glob("s*.jsonl") if (s := _summary(p)) is not None]
    found.sort(key=lambda s: s.modified, reverse=True)
    return found if limit is None else found[:limit]


def format_age(modified: float, now: float | None = None) -> str:
    seconds = max(0, int((time.time() if now is None else now) - modified))
    if seconds < 60:
        return f"{seconds}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m ago"
    if seconds < 86400:
        return f"{seconds // 3600}h ago"
    return f"{seconds // 86400}d ago"
