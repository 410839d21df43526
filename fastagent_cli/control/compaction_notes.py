"""What a host says about a compaction while it happens: one line when it starts, one when it is
over, from the ``compaction_started`` / ``compaction_finished`` events (``chat`` prints them in
the conversation, ``invoke`` on stderr).

A compaction makes a model call that can take as long as an answer (18-42 s with a small local
model): without a word, that is a frozen spinner, or an ``invoke`` that hangs after its answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastagent_cli.control.events import SessionEvent

__all__ = ["COMPACTION_EVENTS", "compaction_note"]

COMPACTION_EVENTS = frozenset({"compaction_started", "compaction_finished"})


def _tokens(value: Any) -> str | None:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else None


def compaction_note(event: SessionEvent) -> str | None:
    """The line for a compaction event (``None`` for any other event)."""
    data: Mapping[str, Any] = event.data
    if event.type == "compaction_started":
        tokens = _tokens(data.get("tokens"))
        return (
            f"compacting the conversation ({tokens} tokens)..."
            if tokens
            else "compacting the conversation..."
        )
    if event.type != "compaction_finished":
        return None
    if data.get("aborted"):
        return "compaction aborted; the history is unchanged"
    if "error" in data:
        return f"compaction failed: {data.get('error')}; the history is unchanged"
    size = len(str(data.get("summary", "")))
    before, after = _tokens(data.get("tokensBefore")), _tokens(data.get("tokensAfter"))
    sizes = f" {before} -> about {after} tokens;" if before and after else ""
    return f"compacted the conversation:{sizes} older history is now a {size:,}-character summary"
