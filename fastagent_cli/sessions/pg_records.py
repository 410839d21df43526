"""Session records in the database, read incrementally and appended through the link.

* :class:`RecordCache` keeps the most recently used records parsed, with the ``seq`` of their last
  line, so reading a record again fetches only the lines appended since, by this instance or any
  other (one query, the header row and the new lines together). A record replaced under the same
  id (deleted, created again) has a new ``rid`` and is read whole.
* :class:`Appender` is the sink of a record opened for writing: each append becomes numbered
  lines queued on the link with the summary changes the listing reads (message count, first
  prompt, name). An append refused at once (the link is down, the lease went with it, an earlier
  append failed) raises; one that fails later fails the record's :meth:`Appender.flush`, so a
  turn never reports success over lines that were not written, and a failed record refuses further
  appends (its later lines would leave a gap).

Lines are stored as written (pi's v3 JSON, one entry a line), so an export is byte for byte what
a file record would hold.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastagent_cli.errors import DatabaseError, SessionError
from fastagent_cli.messages import message_text
from fastagent_cli.state.atomic import dumps_line
from fastagent_cli.state.pg.link import EntryWrite

if TYPE_CHECKING:
    from fastagent_cli.state.pg.database import Database

__all__ = ["Appender", "CachedRecord", "RecordCache", "parse_lines", "summary_of"]

log = logging.getLogger("fastagent.sessions")

Entry = dict[str, Any]
PROMPT_CHARS = 500
"""How much of the first user message the summary keeps (the listing shows 60 characters)."""


def parse_lines(session: str, lines: Sequence[str]) -> list[Entry]:
    """The entries of ``lines``; one that is not a JSON object is skipped with a warning (the
    record chains past it, as it does for a file)."""
    out: list[Entry] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if isinstance(entry, dict):
            out.append(entry)
        else:
            log.warning("[sessions] session %s: skipped a stored line that is not a JSON object", session)
    return out


def summary_of(entries: Sequence[Entry], has_prompt: bool) -> tuple[int, str | None, str | None]:
    """``(messages, first prompt, name)`` that ``entries`` add to a record's summary."""
    messages = 0
    first: str | None = None
    name: str | None = None
    for entry in entries:
        kind = entry.get("type")
        if kind == "message":
            messages += 1
            message = entry.get("message")
            if (
                not has_prompt
                and first is None
                and isinstance(message, dict)
                and message.get("role") == "user"
            ):
                first = message_text(message)[:PROMPT_CHARS] or None
        elif kind == "session_info":
            value = entry.get("name")
            if isinstance(value, str) and value.strip():
                name = value.strip()
    return messages, first, name


@dataclass(slots=True)
class CachedRecord:
    rid: int
    header: Entry
    header_line: str
    last_seq: int
    has_prompt: bool
    entries: list[Entry] = field(default_factory=list)


class RecordCache:
    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._records: OrderedDict[str, CachedRecord] = OrderedDict()

    def get(self, session: str) -> CachedRecord | None:
        found = self._records.get(session)
        if found is not None:
            self._records.move_to_end(session)
        return found

    def put(self, session: str, record: CachedRecord) -> None:
        self._records[session] = record
        self._records.move_to_end(session)
        while len(self._records) > self.capacity:
            self._records.popitem(last=False)

    def drop(self, session: str) -> None:
        self._records.pop(session, None)

    def appended(self, session: str, rid: int, seq: int, entries: Sequence[Entry], has_prompt: bool) -> None:
        """Lines ``seq``... of ``rid`` were committed by this process: extend the cached record
        when it ends just before them (otherwise the next read fetches them)."""
        cached = self._records.get(session)
        if cached is not None and cached.rid == rid and cached.last_seq == seq - 1:
            cached.entries.extend(entries)
            cached.last_seq = seq + len(entries) - 1
            cached.has_prompt = cached.has_prompt or has_prompt


class Appender:
    """The sink (and flush) of one record opened for writing."""

    def __init__(
        self,
        db: Database,
        cache: RecordCache,
        pending: dict[str, set[asyncio.Future[None]]],
        session: str,
        cached: CachedRecord,
        epoch: int | None,
        *,
        sync: bool,
    ) -> None:
        self.db = db
        self.cache = cache
        self.pending = pending
        self.session = session
        self.rid = cached.rid
        self.next_seq = cached.last_seq + 1
        self.has_prompt = cached.has_prompt
        self.epoch = epoch
        self.sync = sync
        self.failure: SessionError | None = None
        self._writes: list[asyncio.Future[None]] = []

    def __call__(self, entries: Sequence[Entry]) -> None:
        if self.failure is not None:
            raise self.failure
        if self.epoch is not None and not self.db.link.holds(self.epoch):
            self.failure = SessionError(
                "lost the database connection that held this session's lease; the turn stops here",
                retryable=True,
            )
            raise self.failure
        messages, first, name = summary_of(entries, self.has_prompt)
        write = EntryWrite(
            self.rid,
            self.next_seq,
            [dumps_line(entry) for entry in entries],
            self.epoch,
            messages=messages,
            first_prompt=first,
            name=name,
            sync=self.sync,
        )
        self.db.link.write(write)
        if write.done.done() and write.done.exception() is not None:
            self._failed(write.done.exception())
            assert self.failure is not None
            raise self.failure
        seq = self.next_seq
        self.next_seq += len(entries)
        self.has_prompt = self.has_prompt or first is not None
        added = list(entries)
        self._writes.append(write.done)
        waiting = self.pending.setdefault(self.session, set())
        waiting.add(write.done)

        def landed(done: asyncio.Future[None]) -> None:
            waiting.discard(done)
            if not waiting and self.pending.get(self.session) is waiting:
                del self.pending[self.session]
            if done.cancelled():
                return
            error = done.exception()
            if error is None:
                self.cache.appended(self.session, self.rid, seq, added, first is not None)
            else:
                self._failed(error)

        write.done.add_done_callback(landed)

    def _failed(self, error: BaseException | None) -> None:
        if self.failure is None:
            if isinstance(error, DatabaseError):
                self.failure = SessionError(error.message, retryable=error.retryable)
            else:
                self.failure = SessionError(f"cannot write the session record: {error}")
        self.cache.drop(self.session)

    async def flush(self) -> None:
        writes, self._writes = self._writes, []
        if writes:
            await asyncio.gather(*writes, return_exceptions=True)
        if self.failure is not None:
            raise self.failure
