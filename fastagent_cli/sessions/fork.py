"""Forks: a new record copying a session's active path up to an entry, its header naming the
origin (``fastagentFork``) so that a repeated fork is a no-op. Shared by every store."""

from __future__ import annotations

from typing import Any

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.record import SessionRecord, is_position, new_header

__all__ = ["FORK_KEY", "ForkConflict", "fork_entries", "fork_header", "same_fork"]


FORK_KEY = "fastagentFork"
"""The header key naming a forked record's origin: ``{"session": <from>, "entryId": <at>}``."""


class ForkConflict(SessionError):
    """The fork's target already exists holding a different history."""


def fork_entries(source: SessionRecord, at: str) -> list[dict[str, Any]]:
    """The entries a fork of ``source`` at ``at`` starts with: the path from the root to ``at``,
    ids kept (so entry cursors stay valid), without labels or leaf markers. KeyError for an entry
    that is not a position in ``source``."""
    target = source.by_id.get(at)
    if target is None or not is_position(target):
        raise KeyError(at)
    return [dict(e) for e in source.path(at) if is_position(e)]


def fork_header(session: str, cwd: str, source: SessionRecord, at: str, parent: str) -> dict[str, Any]:
    header = new_header(session, cwd, parent)
    header[FORK_KEY] = {"session": source.session, "entryId": at}
    return header


def same_fork(header: dict[str, Any], source: str, at: str) -> bool:
    return header.get(FORK_KEY) == {"session": source, "entryId": at}
