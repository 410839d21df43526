"""The kit's stores over the file backend: turn intents, the seen ring, context buffers, thread
participants. Ceilings, persistence across a restart, corrupt and wrong-shaped files, failed writes."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.channels.kit.context_buffer import BUFFER_LINE_MAX_CHARS, ContextBuffer
from fastagent_cli.channels.kit.journal import StateWriteError
from fastagent_cli.channels.kit.participants import ThreadParticipants, summons
from fastagent_cli.channels.kit.seen import SeenRing
from fastagent_cli.channels.kit.turn_store import MAX_TURN_ATTEMPTS, TurnStore
from fastagent_cli.state.channel_state import FileChannelState


def turn(turn_id: str, session: str = "s", **extra: Any) -> dict[str, Any]:
    return {"id": turn_id, "session": session, **extra}


def order(record: dict[str, Any]) -> int:
    return int(record["id"])


async def opened_turns(home: Path, **options: Any) -> TurnStore:
    store = TurnStore(FileChannelState(home), label="[test]", order=order, **options)
    await store.open()
    return store


# --- turns ---------------------------------------------------------------------------------------


async def test_an_added_turn_is_on_disk_before_add_returns(tmp_path: Path) -> None:
    store = await opened_turns(tmp_path)
    assert await store.add(turn("12", text="hi")) is True
    journal = (tmp_path / "turns.jsonl").read_text().splitlines()
    assert json.loads(journal[-1])["e"] == {
        "op": "add",
        "turn": {"id": "12", "session": "s", "text": "hi", "attempts": 0},
    }
    again = await opened_turns(tmp_path)
    assert again.recover() == [{"id": "12", "session": "s", "text": "hi", "attempts": 0}]


async def test_re_adding_a_pending_id_keeps_its_attempts(tmp_path: Path) -> None:
    store = await opened_turns(tmp_path)
    await store.add(turn("5"))
    assert await store.start_attempt("5") == "run"
    assert await store.add(turn("5")) is False
    assert (await opened_turns(tmp_path)).recover()[0]["attempts"] == 1


async def test_a_concurrent_second_add_shares_the_first_ones_fate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await opened_turns(tmp_path)
    first, second = await asyncio.gather(store.add(turn("8")), store.add(turn("8")))
    assert (first, second) == (True, False)
    disk_full(monkeypatch)
    results = await asyncio.gather(store.add(turn("9")), store.add(turn("9")), return_exceptions=True)
    assert [type(r) for r in results] == [StateWriteError, StateWriteError]
    assert not store.pending("9")


async def test_recovery_is_in_arrival_order(tmp_path: Path) -> None:
    store = await opened_turns(tmp_path)
    for turn_id in ("30", "4", "100", "7"):
        await store.add(turn(turn_id))
    await store.remove("7")
    assert [r["id"] for r in (await opened_turns(tmp_path)).recover()] == ["4", "30", "100"]


async def test_the_ceiling_drops_a_turn_started_three_times(tmp_path: Path, caplog: Any) -> None:
    await (await opened_turns(tmp_path)).add(turn("9", session="chat"))
    for _ in range(MAX_TURN_ATTEMPTS):  # three starts, each interrupted (a new process each time)
        assert await (await opened_turns(tmp_path)).start_attempt("9") == "run"
    with caplog.at_level(logging.ERROR, logger="fastagent.channel"):
        assert await (await opened_turns(tmp_path)).start_attempt("9") == "exceeded"
    assert "dropping turn 9 after starting it 3 time(s) without finishing (session=chat)" in caplog.text
    assert (await opened_turns(tmp_path)).recover() == []


def disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every journal write fails from now on, as on a full disk."""

    def write(fd: int, data: Any) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("fastagent_cli.state.channel_state.os.write", write)


async def test_an_unpersistable_attempt_defers_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await opened_turns(tmp_path)
    await store.add(turn("3"))
    disk_full(monkeypatch)
    assert await store.start_attempt("3") == "defer"
    assert store.recover()[0]["attempts"] == 0  # memory matches the disk: nothing was applied


async def test_a_failed_add_raises_and_leaves_nothing_pending(tmp_path: Path) -> None:
    store = await opened_turns(tmp_path)
    (tmp_path / "turns.jsonl").mkdir()
    with pytest.raises(StateWriteError, match="cannot write"):
        await store.add(turn("1"))
    assert not store.pending("1") and store.recover() == []


@pytest.mark.parametrize(
    "content",
    [
        "{broken",
        json.dumps({"generation": 1, "data": ["not", "a", "map"]}),
        json.dumps({"generation": 1, "data": {"1": {"id": "1", "session": 5, "attempts": 0}}}),
        json.dumps({"generation": 1, "data": {"1": {"id": "2", "session": "s", "attempts": 0}}}),
    ],
)
async def test_a_corrupt_or_wrong_shaped_file_warns_and_starts_empty(
    tmp_path: Path, content: str, caplog: Any
) -> None:
    (tmp_path / "turns.json").write_text(content)
    with caplog.at_level(logging.WARNING, logger="fastagent.channel"):
        store = await opened_turns(tmp_path)
    assert store.recover() == []
    assert "[test]" in caplog.text and str(tmp_path / "turns.json") in caplog.text
    assert "starting without what it held" in caplog.text
    await store.add(turn("1"))  # and it works from there
    assert (await opened_turns(tmp_path)).recover()[0]["id"] == "1"


async def test_a_channel_record_check_applies_at_load(tmp_path: Path, caplog: Any) -> None:
    store = await opened_turns(tmp_path)
    await store.add(turn("1", chat="not a number"))
    with caplog.at_level(logging.WARNING, logger="fastagent.channel"):
        checked = await opened_turns(tmp_path, is_record=lambda r: isinstance(r.get("chat"), int))
    assert checked.recover() == []
    assert "skipped a malformed journal entry" in caplog.text


async def test_the_journal_is_compacted_into_the_snapshot(tmp_path: Path) -> None:
    store = TurnStore(FileChannelState(tmp_path), label="[test]", order=order)
    store.compact_every = 10
    await store.open()
    for n in range(25):
        await store.add(turn(str(n)))
        await store.remove(str(n - 1))
    journal = (tmp_path / "turns.jsonl").read_text().splitlines()
    assert len(journal) == 49  # no rewrite in the middle of a burst (25 adds, 24 removes)
    await store.aclose()
    snapshot = json.loads((tmp_path / "turns.json").read_text())
    assert snapshot["generation"] == 1 and list(snapshot["data"]) == ["24"]
    assert (tmp_path / "turns.jsonl").read_text() == ""
    assert [r["id"] for r in (await opened_turns(tmp_path)).recover()] == ["24"]


async def test_a_due_compaction_waits_for_a_pause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fastagent_cli.channels.kit.journal.IDLE_S", 0.2)
    store = TurnStore(FileChannelState(tmp_path), label="[test]", order=order)
    store.compact_every = 4
    await store.open()
    for n in range(5):
        await store.add(turn(str(n)))
    assert not (tmp_path / "turns.json").exists()
    for _ in range(100):  # the snapshot lands first, the journal is emptied just after it
        await asyncio.sleep(0.05)
        if (tmp_path / "turns.json").exists() and (tmp_path / "turns.jsonl").read_text() == "":
            break
    assert len(json.loads((tmp_path / "turns.json").read_text())["data"]) == 5
    assert (tmp_path / "turns.jsonl").read_text() == ""


# --- seen ----------------------------------------------------------------------------------------


async def test_the_seen_ring_keeps_the_last_2000_ids_across_a_restart(tmp_path: Path) -> None:
    ring = SeenRing(FileChannelState(tmp_path), label="[test]")
    await ring.open()
    for n in range(2100):
        ring.add(str(n))
    await ring.aclose()
    again = SeenRing(FileChannelState(tmp_path), label="[test]")
    await again.open()
    assert len(again) == 2000
    assert "99" not in again and "100" in again and "2099" in again


async def test_a_wrong_shaped_seen_file_starts_empty(tmp_path: Path, caplog: Any) -> None:
    (tmp_path / "seen.json").write_text(json.dumps({"generation": 0, "data": {"a": 1}}))
    ring = SeenRing(FileChannelState(tmp_path), label="[test]")
    with caplog.at_level(logging.WARNING, logger="fastagent.channel"):
        await ring.open()
    assert len(ring) == 0 and "unexpected shape" in caplog.text


# --- buffers -------------------------------------------------------------------------------------


def line(entry: dict[str, Any]) -> str:
    return f"{entry['sender']}: {entry['body']}"


async def opened_buffer(home: Path) -> ContextBuffer:
    buffer = ContextBuffer(FileChannelState(home), label="[test]", line=line)
    await buffer.open()
    return buffer


async def test_the_buffer_keeps_4000_chars_of_280_char_lines(tmp_path: Path) -> None:
    buffer = await opened_buffer(tmp_path)
    await buffer.push("g", {"sender": "a", "body": "x " * 400})
    assert len(buffer.peek("g").consumed[0]["body"]) == BUFFER_LINE_MAX_CHARS
    for n in range(40):
        await buffer.push("g", {"sender": "b", "body": f"{n:03d} " + "y" * 150})
    fold = (await opened_buffer(tmp_path)).peek("g")
    assert len(fold.text) <= 4000
    assert fold.text.splitlines()[-1].startswith("b: 039")
    assert not fold.text.startswith("a: ")  # the oldest went first


async def test_commit_removes_only_what_the_turn_folded(tmp_path: Path) -> None:
    buffer = await opened_buffer(tmp_path)
    await buffer.push("g", {"sender": "a", "body": "one"})
    await buffer.push("g", {"sender": "b", "body": "two"})
    fold = buffer.peek("g")
    await buffer.push("g", {"sender": "c", "body": "three (arrived while the turn ran)"})
    assert buffer.peek("g").text.count("\n") == 2  # peek removes nothing
    await buffer.commit_consumed("g", fold.consumed)
    assert (await opened_buffer(tmp_path)).peek("g").text == "c: three (arrived while the turn ran)"


async def test_a_failed_push_raises_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    buffer = await opened_buffer(tmp_path)
    await buffer.push("g", {"sender": "a", "body": "kept"})
    disk_full(monkeypatch)
    with pytest.raises(StateWriteError, match="No space left on device"):
        await buffer.push("g", {"sender": "b", "body": "lost"})
    assert buffer.peek("g").text == "a: kept"


# --- participants --------------------------------------------------------------------------------


async def opened_participants(home: Path, **options: Any) -> ThreadParticipants:
    store = ThreadParticipants(FileChannelState(home), label="[test]", **options)
    await store.open()
    return store


async def test_the_participant_rule(tmp_path: Path) -> None:
    people = await opened_participants(tmp_path)
    people.merge("t1", humans=["alice"])
    assert not summons(people, "t1", direct=False, mentions_agent=False, mentions_others=False)
    assert summons(people, "t1", direct=True, mentions_agent=False, mentions_others=False)
    assert summons(people, "t1", direct=False, mentions_agent=True, mentions_others=True)
    people.merge("t1", agent_spoke=True)
    assert summons(people, "t1", direct=False, mentions_agent=False, mentions_others=False)
    assert not summons(people, "t1", direct=False, mentions_agent=False, mentions_others=True)
    people.merge("t1", humans=["bob", "carol"])  # a second human: a mention is needed again
    assert not people.admits_bare_message("t1") and people.agent_spoke_in("t1")
    await people.aclose()
    again = await opened_participants(tmp_path)
    assert again.state["t1"] == {"humans": ["alice", "bob"], "agentSpoke": True}  # capped at 2 humans


async def test_bystander_threads_are_evicted_first(tmp_path: Path) -> None:
    people = await opened_participants(tmp_path, max_threads=3)
    people.merge("served", humans=["a"], agent_spoke=True)
    people.merge("bystander-1", humans=["b"])
    people.merge("bystander-2", humans=["c"])
    people.merge("new", humans=["d"])
    assert set(people.state) == {"served", "bystander-2", "new"}
    people.merge("newer", humans=["e"], agent_spoke=True)
    assert set(people.state) == {"served", "new", "newer"}
    await people.aclose()
    assert set((await opened_participants(tmp_path, max_threads=3)).state) == {"served", "new", "newer"}


async def test_the_default_caps_are_1000_threads(tmp_path: Path) -> None:
    people = await opened_participants(tmp_path)
    for n in range(1005):
        people.merge(f"t{n}", humans=["x"])
    assert len(people.state) == 1000 and "t4" not in people.state and "t5" in people.state


def test_a_signed_timestamp_is_fresh_within_five_minutes_only() -> None:
    from fastagent_cli.channels.kit.routes import timestamp_fresh

    now = 1_700_000_000.0
    assert timestamp_fresh("1700000000", now)
    assert timestamp_fresh(str(int(now) - 300), now) and timestamp_fresh(str(int(now) + 300), now)
    assert not timestamp_fresh(str(int(now) - 301), now) and not timestamp_fresh(str(int(now) + 301), now)
    assert not timestamp_fresh(str(int(now) - 3600), now)
    for malformed in (None, "", "12.5", "-1", "abc", "1" * 13):
        assert not timestamp_fresh(malformed, now)
