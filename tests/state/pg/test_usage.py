"""The usage ledger in a real PostgreSQL: sums per session and since a day's start across
instances, namespaces kept apart, entries in order."""

from __future__ import annotations

from fastagent_cli.state.pg import Database, DatabaseSettings
from fastagent_cli.state.pg.usage import PgUsageLedger
from fastagent_cli.state.usage import UsageEntry

T0 = 1_764_633_600_000  # 2025-12-02T00:00:00Z


async def test_totals_across_instances_and_namespaces(database_url: str) -> None:
    first = Database(DatabaseSettings(database_url, "agent"))
    second = Database(DatabaseSettings(database_url, "agent"))
    elsewhere = Database(DatabaseSettings(database_url, "other-agent"))
    try:
        a, b, c = PgUsageLedger(first), PgUsageLedger(second), PgUsageLedger(elsewhere)
        await a.add(UsageEntry(T0 - 1000, "s1", "p/m", 100, 10, 5, 1, 0.5))  # yesterday
        await b.add(UsageEntry(T0 + 1000, "s1", "p/m", 100, 10, 0, 0, 0.25))
        await b.add(UsageEntry(T0 + 2000, "s2", "p/n", 7, 3, 0, 0, 0.125))
        await c.add(UsageEntry(T0 + 3000, "s1", "p/m", 1, 1, 0, 0, 9.0))
        sums = await a.session_totals(["s1", "s2", "none"])
        assert set(sums) == {"s1", "s2"}
        assert (sums["s1"].requests, sums["s1"].cost, sums["s1"].tokens) == (2, 0.75, 226)
        today = await a.since(T0)
        assert (today.requests, today.cost, today.input) == (2, 0.375, 107)
        entries = await b.entries(T0)
        assert [(e.session, e.model, e.at_ms) for e in entries] == [
            ("s1", "p/m", T0 + 1000),
            ("s2", "p/n", T0 + 2000),
        ]
        assert len(await a.entries()) == 3
        assert (await c.session_totals(["s1"]))["s1"].cost == 9.0
        assert await a.session_totals([]) == {}
    finally:
        for db in (first, second, elsewhere):
            await db.aclose()
