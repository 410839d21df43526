"""The file implementation of the channel state store: atomic snapshots, whole-line journals,
corrupt files reported (never raised), crashes between steps tolerated."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from fastagent_cli.state.channel_state import FileChannelState, channel_home


def test_the_home_is_under_channels_kind(tmp_path: Path) -> None:
    assert channel_home(tmp_path, "telegram") == tmp_path / "channels" / "telegram"


async def test_a_missing_document_loads_empty(tmp_path: Path) -> None:
    loaded = await FileChannelState(tmp_path / "x").load("turns")
    assert (loaded.snapshot, loaded.journal, loaded.problems) == (None, [], [])


async def test_appends_then_replace_round_trip(tmp_path: Path) -> None:
    store = FileChannelState(tmp_path)
    await store.append("turns", [{"op": "add", "n": 1}])
    await store.append("turns", [{"op": "add", "n": 2}, {"op": "add", "n": 3}])
    loaded = await FileChannelState(tmp_path).load("turns")
    assert loaded.journal == [{"op": "add", "n": 1}, {"op": "add", "n": 2}, {"op": "add", "n": 3}]
    await store.replace("turns", {"state": [1, 2, 3]})
    assert (tmp_path / "turns.jsonl").read_bytes() == b""
    on_disk = json.loads((tmp_path / "turns.json").read_text())
    assert on_disk == {"generation": 1, "data": {"state": [1, 2, 3]}}
    await store.append("turns", [{"op": "add", "n": 4}])
    loaded = await FileChannelState(tmp_path).load("turns")
    assert loaded.snapshot == {"state": [1, 2, 3]} and loaded.journal == [{"op": "add", "n": 4}]


async def test_an_acknowledged_append_does_not_queue_behind_the_default_executor(tmp_path: Path) -> None:
    # a burst of new sessions fills the loop's default executor with record publishes (each ending
    # in an fsync); the flush an acknowledgement waits for used to queue behind all of them
    store = FileChannelState(tmp_path)
    await store.append("turns", [{"op": "add", "n": 1}])
    loop = asyncio.get_running_loop()
    release = threading.Event()
    blockers = [loop.run_in_executor(None, release.wait, 60) for _ in range(64)]
    try:
        await asyncio.wait_for(store.append("turns", [{"op": "add", "n": 2}], sync=True), 10)
    finally:
        release.set()
        await asyncio.gather(*blockers)
        await store.aclose()
    loaded = await FileChannelState(tmp_path).load("turns")
    assert loaded.journal == [{"op": "add", "n": 1}, {"op": "add", "n": 2}]


async def test_a_snapshot_is_replaced_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileChannelState(tmp_path)
    await store.replace("seen", ["a"])
    real_replace = os.replace

    def crash(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        await store.replace("seen", ["a", "b"])
    monkeypatch.setattr(os, "replace", real_replace)
    assert (await FileChannelState(tmp_path).load("seen")).snapshot == ["a"]  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["seen.json"]  # no temp file left behind


async def test_journal_lines_of_an_older_generation_are_ignored(tmp_path: Path) -> None:
    """A crash after the new snapshot but before the journal was emptied."""
    (tmp_path / "turns.json").write_text(json.dumps({"generation": 4, "data": {"a": 1}}))
    (tmp_path / "turns.jsonl").write_text(
        json.dumps({"g": 3, "e": "already in the snapshot"}) + "\n" + json.dumps({"g": 4, "e": "new"}) + "\n"
    )
    loaded = await FileChannelState(tmp_path).load("turns")
    assert loaded.journal == ["new"] and loaded.problems == []


async def test_a_torn_last_line_is_skipped_and_the_next_append_starts_clean(tmp_path: Path) -> None:
    journal = tmp_path / "buffers.jsonl"
    journal.write_text(json.dumps({"g": 0, "e": 1}) + "\n" + '{"g": 0, "e": {"op": "pu')
    store = FileChannelState(tmp_path)
    loaded = await store.load("buffers")
    assert loaded.journal == [1]
    assert loaded.problems == [f"{journal}: skipped 1 unreadable line(s)"]
    await store.append("buffers", [2])
    assert (await FileChannelState(tmp_path).load("buffers")).journal == [1, 2]


@pytest.mark.parametrize(
    ("content", "problem"),
    [("{not json", "is not valid JSON"), ('["a", "b"]', "is not a channel state snapshot")],
)
async def test_a_corrupt_snapshot_is_a_problem_not_a_crash(
    tmp_path: Path, content: str, problem: str
) -> None:
    (tmp_path / "seen.json").write_text(content)
    loaded = await FileChannelState(tmp_path).load("seen")
    assert loaded.snapshot is None
    assert len(loaded.problems) == 1 and problem in loaded.problems[0]


async def test_an_unreadable_document_raises(tmp_path: Path) -> None:
    (tmp_path / "turns.json").mkdir(parents=True)
    with pytest.raises(OSError):
        await FileChannelState(tmp_path).load("turns")


async def test_a_journal_that_cannot_be_opened_raises(tmp_path: Path) -> None:
    (tmp_path / "turns.jsonl").mkdir(parents=True)
    with pytest.raises(OSError):
        await FileChannelState(tmp_path).append("turns", [1])


async def test_appends_are_whole_lines_in_one_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileChannelState(tmp_path)
    await store.append("turns", ["first"])
    writes: list[bytes] = []
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr("fastagent_cli.state.channel_state.os.write", spy)
    await store.append("turns", ["a", {"b": 1}], sync=False)
    assert writes == [b'{"g":0,"e":"a"}\n{"g":0,"e":{"b":1}}\n']
    await store.aclose()


async def test_channel_state_is_private(tmp_path: Path) -> None:
    home = tmp_path / "channels" / "telegram"
    store = FileChannelState(home)
    await store.append("turns", [1])
    await store.replace("seen", ["a"])
    await store.aclose()
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in home.iterdir()} == {0o600}
