"""The usage ledger: one line per model answer, what it used and what it cost.

Every answer a model gives a run (its usage as the provider reported it, priced from the catalog
or ``models.json`` ``cost``) is one :class:`UsageEntry`. The totals per session, per model and per
day are sums over those entries, so they survive a restart and a deleted session still counts
toward the day it spent on. Days are UTC days.

* files (the default): ``<state root>/usage.jsonl``, lines appended whole (a crash tears at most
  the last one, which readers skip); every process appending to it and every reader sees all of
  them. :class:`FileUsageLedger` keeps running sums per session and per day, reading only the
  lines added since it last looked.
* the shared database: :class:`fastagent_cli.state.pg.usage.PgUsageLedger` (``fastagent_usage``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from fastagent_cli.state.atomic import append_jsonl, parse_jsonl

__all__ = [
    "USAGE_FILE",
    "FileUsageLedger",
    "UsageEntry",
    "UsageLedger",
    "UsageTotals",
    "day_of",
    "day_start_ms",
    "entry_from_usage",
    "format_cost",
    "format_tokens",
    "group_totals",
]

USAGE_FILE = "usage.jsonl"
_READ_INLINE = 64 * 1024


def day_of(at_ms: int) -> str:
    """The UTC day of a timestamp, ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d")


def day_start_ms(at_ms: int) -> int:
    """The start (00:00 UTC) of the day ``at_ms`` falls in."""
    return at_ms - at_ms % 86_400_000


@dataclass(frozen=True, slots=True)
class UsageEntry:
    at_ms: int
    session: str
    model: str
    """The model's spec, ``provider/id``."""
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    """USD (0 for a model without prices)."""

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at_ms,
            "session": self.session,
            "model": self.model,
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "cost": self.cost,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> UsageEntry | None:
        """The entry a ledger line holds (``None`` for a line that is not one)."""
        at, session, model = obj.get("at"), obj.get("session"), obj.get("model")
        if not isinstance(at, int) or not isinstance(session, str) or not isinstance(model, str):
            return None
        return cls(
            at,
            session,
            model,
            _count(obj.get("input")),
            _count(obj.get("output")),
            _count(obj.get("cacheRead")),
            _count(obj.get("cacheWrite")),
            _amount(obj.get("cost")),
        )


def entry_from_usage(at_ms: int, session: str, model: str, usage: Mapping[str, Any]) -> UsageEntry:
    """The entry for one answer's pi ``usage`` object."""
    cost = usage.get("cost")
    return UsageEntry(
        at_ms,
        session,
        model,
        _count(usage.get("input")),
        _count(usage.get("output")),
        _count(usage.get("cacheRead")),
        _count(usage.get("cacheWrite")),
        _amount(cost.get("total")) if isinstance(cost, Mapping) else 0.0,
    )


def _count(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


def _amount(value: object) -> float:
    return (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0.0
    )


@dataclass(slots=True)
class UsageTotals:
    requests: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, entry: UsageEntry) -> None:
        self.requests += 1
        self.input += entry.input
        self.output += entry.output
        self.cache_read += entry.cache_read
        self.cache_write += entry.cache_write
        self.cost += entry.cost

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "inputTokens": self.input,
            "outputTokens": self.output,
            "cacheReadTokens": self.cache_read,
            "cacheWriteTokens": self.cache_write,
            "totalTokens": self.tokens,
            "cost": round(self.cost, 10),
        }

    @classmethod
    def of(cls, entries: Iterable[UsageEntry]) -> UsageTotals:
        totals = cls()
        for entry in entries:
            totals.add(entry)
        return totals


def format_tokens(count: int) -> str:
    """A token count as people read it: ``950``, ``12.3k``, ``1.20M`` (``usage``, ``sessions``,
    the chat's status line)."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


def format_cost(cost: float) -> str:
    """USD: ``$0``, ``$0.0042`` under a dollar, ``$12.34`` from one."""
    if cost == 0:
        return "$0"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def group_totals(entries: Iterable[UsageEntry], by: str) -> dict[str, UsageTotals]:
    """Totals keyed by ``session``, ``model`` or ``day``, in first-seen order."""
    groups: dict[str, UsageTotals] = {}
    for entry in entries:
        key = day_of(entry.at_ms) if by == "day" else entry.session if by == "session" else entry.model
        groups.setdefault(key, UsageTotals()).add(entry)
    return groups


class UsageLedger(Protocol):
    async def add(self, entry: UsageEntry) -> None:
        """Record one answer's usage (OSError / DatabaseError when the store refuses)."""
        ...

    async def session_totals(self, sessions: Sequence[str]) -> dict[str, UsageTotals]:
        """Each of ``sessions``' totals (a session without entries is left out)."""
        ...

    async def since(self, since_ms: int) -> UsageTotals:
        """The totals of every entry at or after ``since_ms`` (a day: its start)."""
        ...

    async def entries(self, since_ms: int | None = None) -> list[UsageEntry]:
        """The entries (at or after ``since_ms``), oldest first."""
        ...


@dataclass(eq=False)
class FileUsageLedger:
    """The ledger in ``<state root>/usage.jsonl`` (see the module doc)."""

    directory: Path
    _offset: int = 0
    _sessions: dict[str, UsageTotals] = field(default_factory=dict)
    _days: dict[int, UsageTotals] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.directory / USAGE_FILE

    async def add(self, entry: UsageEntry) -> None:
        # One short whole-line append (no fsync: the session record holds the same numbers).
        self.directory.mkdir(parents=True, exist_ok=True)
        append_jsonl(self.path, [entry.to_json()])

    async def _refresh(self) -> None:
        """Fold in the lines appended since the last look (by this process or another)."""
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return
        if size < self._offset:  # replaced by a shorter file: start over
            self._offset = 0
            self._sessions.clear()
            self._days.clear()
        if size == self._offset:
            return
        if size - self._offset > _READ_INLINE:  # the first look at a long ledger: off the loop
            data = await asyncio.to_thread(_read_from, self.path, self._offset, size)
        else:  # a few new lines: a read of microseconds
            data = _read_from(self.path, self._offset, size)
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next look
        self._offset += end
        for entry in _parse(data[:end]):
            self._sessions.setdefault(entry.session, UsageTotals()).add(entry)
            self._days.setdefault(day_start_ms(entry.at_ms), UsageTotals()).add(entry)

    async def session_totals(self, sessions: Sequence[str]) -> dict[str, UsageTotals]:
        await self._refresh()
        return {s: self._sessions[s] for s in sessions if s in self._sessions}

    async def since(self, since_ms: int) -> UsageTotals:
        await self._refresh()
        if since_ms == day_start_ms(since_ms):
            totals = UsageTotals()
            for day, sums in self._days.items():
                if day >= since_ms:
                    _merge(totals, sums)
            return totals
        return UsageTotals.of(await self.entries(since_ms))

    async def entries(self, since_ms: int | None = None) -> list[UsageEntry]:
        try:
            data = await asyncio.to_thread(self.path.read_bytes)
        except FileNotFoundError:
            return []
        return [e for e in _parse(data) if since_ms is None or e.at_ms >= since_ms]


def _read_from(path: Path, offset: int, size: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read(size - offset)


def _parse(data: bytes) -> list[UsageEntry]:
    out: list[UsageEntry] = []
    for obj in parse_jsonl(data):
        entry = UsageEntry.from_json(obj)
        if entry is not None:
            out.append(entry)
    return out


def _merge(into: UsageTotals, other: UsageTotals) -> None:
    into.requests += other.requests
    into.input += other.input
    into.output += other.output
    into.cache_read += other.cache_read
    into.cache_write += other.cache_write
    into.cost += other.cost
