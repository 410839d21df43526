"""Schedule claims and wake-ups in a real PostgreSQL, shared by three instances: a slot is claimed
once, a due wake-up is taken by one poller, a recurring one advances, the per-session limit holds
under concurrent adds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from fastagent_cli.state.pg import Database, DatabaseSettings
from fastagent_cli.state.pg.claims import PgClaims
from fastagent_cli.state.wakeup import TooManyWakeups, Wakeup

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
async def three(database_url: str) -> AsyncIterator[list[PgClaims]]:
    dbs = [Database(DatabaseSettings(database_url, "agent")) for _ in range(3)]
    for db in dbs:
        await db.connect()
    yield [PgClaims(db) for db in dbs]
    for db in dbs:
        await db.aclose()


async def test_a_slot_is_claimed_by_exactly_one_instance(three: list[PgClaims]) -> None:
    slot = NOW
    won = await asyncio.gather(
        *(c.claim_slot("digest", slot, slot + timedelta(milliseconds=i)) for i, c in enumerate(three))
    )
    assert sorted(won) == [False, False, True]
    again = await asyncio.gather(*(c.claim_slot("digest", slot, slot) for c in three))
    assert again == [False, False, False]  # that slot stays claimed
    following = slot + timedelta(hours=1)
    won = await asyncio.gather(*(c.claim_slot("digest", following, following) for c in three))
    assert sorted(won) == [False, False, True]
    assert (await three[2].last_fired())["digest"] == following


async def test_a_due_wakeup_is_taken_once_and_a_recurring_one_advances(three: list[PgClaims]) -> None:
    a = three[0]
    await a.add_wakeup(Wakeup("w1", "s", "remind me", NOW - timedelta(minutes=1)), limit=10)
    await a.add_wakeup(
        Wakeup("w2", "s", "every hour", NOW - timedelta(minutes=1), cron="0 * * * *"), limit=10
    )
    taken = await asyncio.gather(*(c.take_due_wakeup(NOW) for c in three for _ in range(2)))
    ids = sorted(w.id for w in taken if w is not None)
    assert ids == ["w1", "w2"]  # each occurrence once across all pollers
    left = await three[1].wakeups()
    assert [(w.id, w.fire_at) for w in left] == [("w2", NOW + timedelta(hours=1))]
    assert await three[2].remove_wakeup("w2", session="other") is False
    assert await three[2].remove_wakeup("w2", session="s") is True
    assert await a.wakeups() == []


async def test_the_per_session_limit_holds_under_concurrent_adds(three: list[PgClaims]) -> None:
    adds = [
        c.add_wakeup(Wakeup(f"w{i}-{n}", "s", "p", NOW + timedelta(hours=1)), limit=3)
        for n, c in enumerate(three)
        for i in range(2)
    ]
    results = await asyncio.gather(*adds, return_exceptions=True)
    assert sum(1 for r in results if r is None) == 3
    assert all(isinstance(r, TooManyWakeups) for r in results if r is not None)
    assert len(await three[0].wakeups()) == 3
