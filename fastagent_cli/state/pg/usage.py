"""The usage ledger in the shared database (``fastagent_usage``, migration 3): one row per model
answer, the totals summed by the queries, so every instance's spend counts toward one limit."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from fastagent_cli.state.usage import UsageEntry, UsageTotals

if TYPE_CHECKING:
    from fastagent_cli.state.pg.database import Database
    from fastagent_cli.state.pg.driver import Conn

__all__ = ["PgUsageLedger"]

T = TypeVar("T")

_ADD = """
INSERT INTO fastagent_usage
    (namespace, at, session, model, input, output, cache_read, cache_write, cost)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
"""
_SUMS = """count(*) AS requests, coalesce(sum(input), 0) AS input, coalesce(sum(output), 0) AS output,
    coalesce(sum(cache_read), 0) AS cache_read, coalesce(sum(cache_write), 0) AS cache_write,
    coalesce(sum(cost), 0) AS cost"""
_BY_SESSION = f"""
SELECT session, {_SUMS} FROM fastagent_usage WHERE namespace = $1 AND session = ANY($2::text[])
GROUP BY session
"""
_SINCE = f"SELECT {_SUMS} FROM fastagent_usage WHERE namespace = $1 AND at >= $2"
_ENTRIES = """
SELECT at, session, model, input, output, cache_read, cache_write, cost FROM fastagent_usage
WHERE namespace = $1 AND at >= $2 ORDER BY at, id
"""


def _when(at_ms: int) -> datetime:
    return datetime.fromtimestamp(at_ms / 1000, UTC)


def _totals(row: Any) -> UsageTotals:
    return UsageTotals(
        int(row["requests"]),
        int(row["input"]),
        int(row["output"]),
        int(row["cache_read"]),
        int(row["cache_write"]),
        float(row["cost"]),
    )


class PgUsageLedger:
    """:class:`~fastagent_cli.state.usage.UsageLedger` on the shared database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def _run(self, what: str, work: Callable[[Conn], Awaitable[T]]) -> T:
        return await self.db.run(what, work)

    async def add(self, entry: UsageEntry) -> None:
        args = (
            self.db.namespace,
            _when(entry.at_ms),
            entry.session,
            entry.model,
            entry.input,
            entry.output,
            entry.cache_read,
            entry.cache_write,
            entry.cost,
        )
        await self._run("record usage", lambda conn: conn.execute(_ADD, *args))

    async def session_totals(self, sessions: Sequence[str]) -> dict[str, UsageTotals]:
        if not sessions:
            return {}
        rows = await self._run(
            "read usage totals", lambda conn: conn.fetch(_BY_SESSION, self.db.namespace, list(sessions))
        )
        return {row["session"]: _totals(row) for row in rows}

    async def since(self, since_ms: int) -> UsageTotals:
        row = await self._run(
            "read usage totals", lambda conn: conn.fetchrow(_SINCE, self.db.namespace, _when(since_ms))
        )
        return _totals(row)

    async def entries(self, since_ms: int | None = None) -> list[UsageEntry]:
        start = _when(since_ms or 0)
        rows = await self._run("read usage", lambda conn: conn.fetch(_ENTRIES, self.db.namespace, start))
        return [
            UsageEntry(
                int(row["at"].timestamp() * 1000),
                row["session"],
                row["model"],
                int(row["input"]),
                int(row["output"]),
                int(row["cache_read"]),
                int(row["cache_write"]),
                float(row["cost"]),
            )
            for row in rows
        ]
