"""The file-backed schedule claims: fires and wake-ups, atomic and locked; malformed entries
dropped with a warning; corrupt files set aside, never silently overwritten (features J5, J16,
J18, J19)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from datetime import timedelta
from pathlib import Path

import pytest

from fastagent_cli.state.claims import ClaimsUnavailable, TooManyWakeups, Wakeup, open_schedule_claims
from fastagent_cli.state.claims_files import FileClaims
from tests.schedules.helpers import at

NOW = at("2025-01-06 09:00")


def one_shot(wake_id: str, session: str = "s1", minutes: int = 5, **extra: object) -> Wakeup:
    return Wakeup(wake_id, session, f"prompt {wake_id}", NOW + timedelta(minutes=minutes), **extra)  # type: ignore[arg-type]


def stored(claims: FileClaims) -> object:
    return json.loads(claims.wakeups_path.read_text())


async def test_reads_create_nothing(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    assert await claims.last_fired() == {}
    assert await claims.wakeups() == []
    assert await claims.take_due_wakeup(NOW) is None
    assert await claims.remove_wakeup("nope") is False
    assert list(tmp_path.iterdir()) == []


async def test_claims_are_recorded_per_schedule(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    await claims.claim_slot("digest", at("2025-01-06 09:00"), at("2025-01-06 09:00:00.1234"))
    await claims.claim_slot("hourly", at("2025-01-06 10:00"), at("2025-01-06 10:00"))
    await claims.claim_slot("digest", at("2025-01-07 09:00"), at("2025-01-07 09:00"))
    path = tmp_path / "schedule" / "fires.json"
    assert json.loads(path.read_text()) == {
        "digest": "2025-01-07T09:00:00.000Z",
        "hourly": "2025-01-06T10:00:00.000Z",
    }
    assert await open_schedule_claims(tmp_path).last_fired() == {
        "digest": at("2025-01-07 09:00"),
        "hourly": at("2025-01-06 10:00"),
    }
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


async def test_a_slot_is_claimed_once(tmp_path: Path) -> None:
    first, second = open_schedule_claims(tmp_path), open_schedule_claims(tmp_path)
    slot = at("2025-01-06 09:00")
    won = await asyncio.gather(
        first.claim_slot("digest", slot, at("2025-01-06 09:00:00.2")),
        second.claim_slot("digest", slot, at("2025-01-06 09:00:00.1")),
    )
    assert sorted(won) == [False, True]
    assert await first.claim_slot("digest", at("2025-01-06 10:00"), at("2025-01-06 10:00:01"))


async def test_concurrent_claims_lose_no_update(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    await asyncio.gather(*(claims.claim_slot(f"s{i}", NOW, NOW) for i in range(20)))
    assert len(await claims.last_fired()) == 20


async def test_a_one_shot_is_removed_when_claimed_and_only_when_due(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    await claims.add_wakeup(one_shot("a", minutes=5), limit=20)
    await claims.add_wakeup(one_shot("b", minutes=1), limit=20)
    assert await claims.take_due_wakeup(NOW) is None
    taken = await claims.take_due_wakeup(NOW + timedelta(minutes=10))
    assert taken is not None and taken.id == "a"  # stored order, not time order
    taken = await claims.take_due_wakeup(NOW + timedelta(minutes=10))
    assert taken is not None and taken.id == "b"
    assert await claims.take_due_wakeup(NOW + timedelta(minutes=10)) is None
    assert await claims.wakeups() == []


async def test_a_recurring_wake_advances_in_place(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    recurring = Wakeup("r", "s1", "ping", at("2025-01-06 09:00"), "0 9 * * *", "UTC", attempts=3)
    await claims.add_wakeup(recurring, limit=20)
    await claims.add_wakeup(one_shot("later", minutes=600), limit=20)
    taken = await claims.take_due_wakeup(at("2025-01-06 09:00:30"))
    assert taken == recurring  # this occurrence, as it was stored
    [advanced, later] = await claims.wakeups()
    assert (advanced.id, advanced.fire_at, advanced.attempts) == ("r", at("2025-01-07 09:00"), 0)
    assert later.id == "later"  # the entry kept its place


async def test_the_per_session_limit_is_checked_with_the_insert(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    await asyncio.gather(*(claims.add_wakeup(one_shot(f"w{i}"), limit=3) for i in range(3)))
    with pytest.raises(TooManyWakeups) as refused:
        await claims.add_wakeup(one_shot("w9"), limit=3)
    assert refused.value.limit == 3 and sorted(w.id for w in refused.value.pending) == ["w0", "w1", "w2"]
    await claims.add_wakeup(one_shot("x", session="s2"), limit=3)
    assert len(await claims.wakeups()) == 4


async def test_remove_is_session_scoped_when_asked(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    await claims.add_wakeup(one_shot("a", session="s1"), limit=20)
    assert await claims.remove_wakeup("a", session="s2") is False
    assert await claims.remove_wakeup("a") is True
    assert await claims.wakeups() == []


async def test_put_stores_a_deferred_wake_as_given(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    await claims.put_wakeup(one_shot("a", attempts=4))
    assert stored(claims) == [  # type: ignore[arg-type]
        {
            "id": "a",
            "session": "s1",
            "prompt": "prompt a",
            "fireAt": "2025-01-06T09:05:00.000Z",
            "attempts": 4,
        }
    ]


async def test_a_malformed_entry_is_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    claims = open_schedule_claims(tmp_path)
    assert isinstance(claims, FileClaims)
    good = one_shot("good").to_json()
    broken = [
        {"id": "no-session", "prompt": "x", "fireAt": "2025-01-06T09:00:00.000Z"},
        {"id": "bad-date", "session": "s", "prompt": "x", "fireAt": "tomorrow"},
        {
            "id": "bad-cron",
            "session": "s",
            "prompt": "x",
            "fireAt": "2025-01-06T09:00:00Z",
            "cron": "every day",
        },
        {
            "id": "bad-attempts",
            "session": "s",
            "prompt": "x",
            "fireAt": "2025-01-06T09:00:00Z",
            "attempts": "2",
        },
        "just a string",
    ]
    claims.directory.mkdir(parents=True)
    claims.wakeups_path.write_text(json.dumps([broken[0], good, *broken[1:]]))
    with caplog.at_level(logging.WARNING, "fastagent.schedule"):
        assert [w.id for w in await claims.wakeups()] == ["good"]
        assert [w.id for w in await claims.wakeups()] == ["good"]  # the file did not change: no new warning
    dropped = [m for m in caplog.messages if m.startswith("[schedule] dropping a malformed wake-up entry")]
    assert len(dropped) == 5
    assert '(session is missing or not a non-empty string): {"id": "no-session"' in dropped[0]
    assert 'cron "every day" has 2 field(s)' in dropped[2]
    await claims.add_wakeup(one_shot("new"), limit=20)  # the next write leaves them out
    assert [e["id"] for e in stored(claims)] == ["good", "new"]  # type: ignore[union-attr]


async def test_a_corrupt_file_is_set_aside_not_overwritten(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    claims = open_schedule_claims(tmp_path)
    assert isinstance(claims, FileClaims)
    claims.directory.mkdir(parents=True)
    claims.wakeups_path.write_text('[{"id": "half')
    claims.fires_path.write_text('{"digest": ')
    with caplog.at_level(logging.WARNING, "fastagent.schedule"):
        assert await claims.wakeups() == []
        assert await claims.last_fired() == {}
        await claims.add_wakeup(one_shot("a"), limit=20)
        await claims.claim_slot("digest", NOW, NOW)
    kept = sorted(p.name.split(".corrupt-")[0] for p in claims.directory.glob("*.corrupt-*"))
    assert kept == ["fires.json", "wakeups.json"]
    assert next(claims.directory.glob("wakeups.json.corrupt-*")).read_text() == '[{"id": "half'
    assert any("is not valid JSON" in m for m in caplog.messages)
    assert any(m.startswith("[schedule] kept the unreadable wakeups.json as ") for m in caplog.messages)
    assert [w.id for w in await claims.wakeups()] == ["a"]


async def test_a_document_of_the_wrong_shape_is_set_aside_too(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    assert isinstance(claims, FileClaims)
    claims.directory.mkdir(parents=True)
    claims.wakeups_path.write_text('{"not": "a list"}')
    assert await claims.wakeups() == []
    await claims.add_wakeup(one_shot("a"), limit=20)
    assert len(list(claims.directory.glob("wakeups.json.corrupt-*"))) == 1


async def test_an_unreadable_file_is_a_storage_fault(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    assert isinstance(claims, FileClaims)
    claims.fires_path.mkdir(parents=True)
    claims.wakeups_path.mkdir(parents=True)
    with pytest.raises(ClaimsUnavailable, match="fires.json is unreadable"):
        await claims.last_fired()
    with pytest.raises(ClaimsUnavailable, match="wakeups.json is unreadable"):
        await claims.wakeups()
    with pytest.raises(OSError):
        await claims.claim_slot("x", NOW, NOW)


async def test_an_idle_poll_rereads_nothing_until_the_file_changes(tmp_path: Path) -> None:
    claims = open_schedule_claims(tmp_path)
    assert isinstance(claims, FileClaims)
    await claims.add_wakeup(one_shot("a", minutes=60), limit=20)
    await claims.take_due_wakeup(NOW)
    parsed = claims._cache
    assert parsed is not None
    for _ in range(5):
        assert await claims.take_due_wakeup(NOW) is None
    assert claims._cache is parsed  # one stat per poll, no parse
    other = open_schedule_claims(tmp_path)  # another process (the `schedule cancel` command)
    await other.add_wakeup(one_shot("b", minutes=1), limit=20)
    due = await claims.take_due_wakeup(NOW + timedelta(minutes=2))
    assert due is not None and due.id == "b"
    os.utime(claims.wakeups_path)  # a touch alone is a change too, and harmless
    assert await claims.take_due_wakeup(NOW) is None
