"""How the chat shows a stored session's age (``/resume``, ``--resume``)."""

from __future__ import annotations

import time

__all__ = ["format_age"]


def format_age(modified: float, now: float | None = None) -> str:
    seconds = max(0, int((time.time() if now is None else now) - modified))
    if seconds < 60:
        return f"{seconds}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m ago"
    if seconds < 86400:
        return f"{seconds // 3600}h ago"
    return f"{seconds // 86400}d ago"
