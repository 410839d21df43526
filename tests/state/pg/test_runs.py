"""The schedule run log in a real PostgreSQL: records of every instance of a namespace in one log,
read back oldest first, per name; each name keeps its newest ``keep`` runs; an unreachable
database is an ``OSError`` (as a disk that refuses), which the scheduler logs and goes on."""

from __future__ import annotations

import asyncio

import pytest

from fastagent_cli.schedules.turns import append_run
from fastagent_cli.state.pg import Database, DatabaseSettings
from fastagent_cli.state.pg.runs import PgRunLog
from fastagent_cli.state.run_log import RunLogUnavailable
from tests.serving.serving_proc import free_port


async def test_instances_share_one_log_and_each_name_keeps_its_newest(database_url: str) -> None:
    dbs = [Database(DatabaseSettings(database_url, ns)) for ns in ("agent", "agent", "other")]
    for db in dbs:
        await db.connect()
    try:
        one, two, other = (PgRunLog(db, keep=3) for db in dbs)
        for i, log in enumerate([one, two] * 3):  # the instances take turns
            await log.write({"name": "digest", "n": i})
        await one.write({"name": "wake", "id": "w1", "outcome": "completed", "reply": "ünïcode ✓"})
        await other.write({"name": "digest", "n": 99})
        kept = await two.read("digest")
        assert [r["n"] for r in kept] == [3, 4, 5]  # the newest three of six, oldest first
        assert await one.read("digest") == kept
        assert await one.read("wake") == [
            {"name": "wake", "id": "w1", "outcome": "completed", "reply": "ünïcode ✓"}
        ]
        assert [r["name"] for r in await one.read()] == ["digest", "digest", "digest", "wake"]
        assert await other.read() == [{"name": "digest", "n": 99}]  # namespaces stay apart
        many = [PgRunLog(db) for db in dbs[:2]]
        await asyncio.gather(*(many[i % 2].write({"name": "burst", "n": i}) for i in range(20)))
        assert sorted(r["n"] for r in await one.read("burst")) == list(range(20))  # none lost
    finally:
        for db in dbs:
            await db.aclose()


async def test_an_unreachable_database_is_an_oserror_the_scheduler_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = Database(DatabaseSettings(f"postgresql://fa:pw@127.0.0.1:{free_port()}/none", "agent"))
    runs = PgRunLog(db)
    try:
        with pytest.raises(RunLogUnavailable, match="connection refused"):
            await runs.read("digest")
        await append_run(runs, {"name": "digest", "outcome": "completed"})  # logged, not raised
    finally:
        await db.aclose()
    assert "could not audit the run of digest in the database postgres" in caplog.text
    assert "pw@" not in caplog.text
