"""Session records kept in memory, for embedding and tests."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastagent_cli.errors import SessionError
from fastagent_cli.messages import message_text
from fastagent_cli.sessions.fork import ForkConflict, fork_entries, fork_header, same_fork
from fastagent_cli.sessions.inherit import Inheritance, inherited_entries
from fastagent_cli.sessions.listing import SessionSummary, parse_iso_ms, summarize
from fastagent_cli.sessions.record import SessionRecord, new_header
from fastagent_cli.sessions.store_protocol import Release, SessionLease
from fastagent_cli.state.atomic import dumps_line, parse_jsonl

__all__ = ["MemorySessionStore"]


class MemorySessionStore:
    """Records in memory. Every open returns a fresh view over the same entry list, as a file
    reopen would."""

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.cwd = str(Path(cwd or os.getcwd()).resolve())
        self._records: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self._modified: dict[str, float] = {}
        self._leased: set[str] = set()

    async def open_or_create(self, session: str, inherit: Inheritance | None = None) -> SessionRecord:
        if session not in self._records:
            header = new_header(session, self.cwd, inherit.parent_session if inherit else None)
            entries: list[dict[str, Any]] = []
            if inherit is not None:
                parent = await self.open_if_exists(inherit.parent_session)
                if parent is not None:
                    entries = inherited_entries(parent, inherit)
            self._records[session] = (header, entries)
            self._modified[session] = time.time()
        return self._view(session)

    async def open_if_exists(self, session: str) -> SessionRecord | None:
        return self._view(session) if session in self._records else None

    async def read(self, session: str) -> SessionRecord | None:
        if session not in self._records:
            return None
        header, entries = self._records[session]
        return SessionRecord(session, header, list(entries))

    def _view(self, session: str) -> SessionRecord:
        header, entries = self._records[session]

        def sink(new: Sequence[dict[str, Any]]) -> None:
            entries.extend(new)
            self._modified[session] = time.time()

        record = SessionRecord(session, header, list(entries), sink=sink)
        record.reconcile()
        return record

    def location(self, session: str) -> Path | None:
        return None

    async def listing(self, limit: int | None = 30) -> list[SessionSummary]:
        return self.list_sessions(limit)

    def list_sessions(self, limit: int | None = 30) -> list[SessionSummary]:
        found = []
        for session, (header, entries) in self._records.items():
            record = SessionRecord(session, header, list(entries))
            messages = [e["message"] for e in entries if e.get("type") == "message"]
            first = next((message_text(m) for m in messages if m.get("role") == "user"), "")
            created = (parse_iso_ms(header.get("timestamp")) or 0) / 1000
            found.append(
                summarize(
                    session,
                    None,
                    first,
                    self._modified[session],
                    created=created,
                    message_count=len(messages),
                    name=record.name,
                )
            )
        found.sort(key=lambda s: s.modified, reverse=True)
        return found if limit is None else found[:limit]

    async def fork(self, source: SessionRecord, at: str, into: str) -> bool:
        entries = fork_entries(source, at)
        existing = self._records.get(into)
        if existing is not None:
            if same_fork(existing[0], source.session, at):
                return False
            raise ForkConflict(f"session {into!r} already exists with a different history")
        self._records[into] = (fork_header(into, self.cwd, source, at, source.session), entries)
        self._modified[into] = time.time()
        return True

    async def delete(self, session: str) -> bool:
        self._modified.pop(session, None)
        return self._records.pop(session, None) is not None

    async def export(self, session: str) -> bytes | None:
        return self.dump(session)

    def dump(self, session: str) -> bytes | None:
        if session not in self._records:
            return None
        header, entries = self._records[session]
        return "".join(dumps_line(line) + "\n" for line in [header, *entries]).encode("utf-8")

    async def import_record(self, session: str, header: dict[str, Any], body: bytes) -> Path | None:
        if session in self._records:
            raise SessionError(f"session {session!r} exists already")
        self._records[session] = (dict(header), parse_jsonl(body))
        self._modified[session] = time.time()
        return None

    def leased(self, session: str) -> SessionLease:
        return SessionLease(session, self.lease)

    async def lease(self, session: str) -> Release | None:
        """The acquire step of :meth:`leased` (callers hold the lease with ``leased``)."""
        return self.try_lease(session)

    def try_lease(self, session: str) -> Callable[[], None] | None:
        if session in self._leased:
            return None
        self._leased.add(session)
        return lambda: self._leased.discard(session)

    def sessions(self) -> list[str]:
        return list(self._records)
