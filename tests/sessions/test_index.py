"""Lookup by id reads no record file, lists the directory only when it may have changed, and
still sees what other processes did."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.sessions import index as index_module
from fastagent_cli.sessions.index import RecordIndex
from fastagent_cli.sessions.layout import record_name
from fastagent_cli.sessions.store import FileSessionStore


def touch(directory: Path, session: str, stamp: str = "2026-03-15T10:00:00.000Z") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / record_name(stamp, session)
    path.write_text('{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}\n')
    return path


def age(directory: Path, seconds: float) -> None:
    stamp = time.time() - seconds
    os.utime(directory, (stamp, stamp))


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = os.listdir

    def counting(path: Any) -> Any:
        calls.append(str(path))
        return real(path)

    monkeypatch.setattr(index_module.os, "listdir", counting)
    return calls


def test_finding_a_stored_session_lists_the_directory_once(tmp_path: Path, listings: list[str]) -> None:
    paths = {f"s{i}": touch(tmp_path, f"s{i}") for i in range(1000)}
    index = RecordIndex(tmp_path)
    for _ in range(3):
        for session, path in paths.items():
            assert index.find(session) == path
    assert len(listings) == 1


def test_a_miss_lists_again_only_when_the_directory_changed(tmp_path: Path, listings: list[str]) -> None:
    touch(tmp_path, "a")
    age(tmp_path, 10)
    index = RecordIndex(tmp_path)
    assert index.find("ghost") is None and index.find("ghost") is None
    assert len(listings) == 1  # unchanged and settled: a miss is one stat
    created = touch(tmp_path, "new")  # another process creates a record
    assert index.find("new") == created
    assert len(listings) == 2


def test_a_change_hidden_in_the_same_mtime_tick_is_still_seen(tmp_path: Path) -> None:
    touch(tmp_path, "a")
    index = RecordIndex(tmp_path)
    assert index.find("b") is None
    before = os.stat(tmp_path)
    created = touch(tmp_path, "b")
    os.utime(tmp_path, ns=(before.st_atime_ns, before.st_mtime_ns))  # a coarse clock: same tick
    assert index.find("b") == created  # the listing was too fresh to trust


def test_two_records_for_one_id_resolve_to_the_last_written(tmp_path: Path) -> None:
    older = touch(tmp_path, "dup", "2026-03-15T10:00:00.000Z")
    newer = touch(tmp_path, "dup", "2026-03-16T10:00:00.000Z")
    os.utime(older, (time.time() + 5, time.time() + 5))  # the older name was written last
    assert RecordIndex(tmp_path).find("dup") == older
    os.utime(newer, (time.time() + 10, time.time() + 10))
    assert RecordIndex(tmp_path).find("dup") == newer


async def test_a_record_deleted_by_another_process_is_gone(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "s", tmp_path)
    await store.open_or_create("gone")
    path = store.location("gone")
    assert path is not None
    other = FileSessionStore(tmp_path / "s", tmp_path)
    assert await other.read("gone") is not None
    path.unlink()
    assert await other.read("gone") is None and other.location("gone") is None
    record = await other.open_or_create("gone")  # and it can be created anew
    assert record.entries == [] and other.location("gone") is not None


async def test_stores_in_two_processes_see_each_others_new_sessions(tmp_path: Path) -> None:
    mine = FileSessionStore(tmp_path / "s", tmp_path)
    theirs = FileSessionStore(tmp_path / "s", tmp_path)
    assert await mine.read("late") is None
    record = await theirs.open_or_create("late")
    record.append("label", targetId="x", label="theirs")
    seen = await mine.read("late")
    assert seen is not None and seen.entries[-1]["label"] == "theirs"
    again = await mine.open_or_create("late")  # and creating it here opens theirs
    assert again.header == record.header


async def test_creating_sessions_lists_nothing_while_no_one_else_creates(
    tmp_path: Path, listings: list[str]
) -> None:
    store = FileSessionStore(tmp_path / "s", tmp_path)
    for i in range(50):
        await store.open_or_create(f"seed-{i}")
    before = len(listings)
    for i in range(100):
        await store.open_or_create(f"new-{i}")
    assert len(listings) == before  # every creation knew its map was complete


async def test_a_creation_elsewhere_in_the_same_mtime_tick_is_not_duplicated(tmp_path: Path) -> None:
    mine = FileSessionStore(tmp_path / "s", tmp_path)
    theirs = FileSessionStore(tmp_path / "s", tmp_path)
    await mine.open_or_create("a")  # my map is complete and trusted now
    directory = mine.files.own
    tick = os.stat(directory)
    created = await theirs.open_or_create("b")
    os.utime(directory, ns=(tick.st_atime_ns, tick.st_mtime_ns))  # a coarse clock: still the same tick
    again = await mine.open_or_create("b")  # the creation counter moved: my map is stale
    assert again.header == created.header and len(list(directory.glob("*_sb.jsonl"))) == 1


def test_a_record_published_during_a_listing_is_not_lost_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Creators publish from worker threads while a reader lists: a listing taken before the new
    # record's link must not replace the map after the record was added (and a later publish must
    # not then mark that incomplete map trusted). Seen as "vanished while it was being opened"
    # when many sessions start at once.
    touch(tmp_path, "a")
    age(tmp_path, 10)
    index = RecordIndex(tmp_path)
    real = os.listdir
    publisher: list[threading.Thread] = []

    def racing(path: Any) -> Any:
        names = real(path)  # the listing, taken before "x" exists
        if not publisher:

            def publish() -> None:
                index.published("x", touch(tmp_path, "x"), 1)

            publisher.append(threading.Thread(target=publish))
            publisher[0].start()
            publisher[0].join(0.5)  # unfixed, it adds "x" now, under the stale listing
        return names

    monkeypatch.setattr(index_module.os, "listdir", racing)
    assert index.find("ghost") is None  # a miss: lists, while "x" is published
    publisher[0].join()
    monkeypatch.setattr(index_module.os, "listdir", real)
    later = touch(tmp_path, "y")
    index.published("y", later, 2)  # another creation marks the map complete again
    assert index.find("x") == tmp_path / record_name("2026-03-15T10:00:00.000Z", "x")
    assert index.find("y") == later
