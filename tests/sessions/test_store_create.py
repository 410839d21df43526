"""A new record is published off the event loop; readers in the same process never see the
moment before it is in place."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.files import Publication
from fastagent_cli.sessions.store import FileSessionStore


class SlowPublish:
    """``store.files.publish_many`` held up by ``delay_s`` (a slow fsync), noting each group's
    sessions and whether it ran off the loop's thread."""

    def __init__(self, store: FileSessionStore, monkeypatch: pytest.MonkeyPatch, delay_s: float) -> None:
        self.publish = store.files.publish_many
        self.delay_s = delay_s
        self.groups: list[list[str]] = []
        self.threads: list[bool] = []
        self.started = threading.Event()
        monkeypatch.setattr(store.files, "publish_many", self)

    def __call__(self, batch: Sequence[Publication]) -> list[tuple[Path, bool] | Exception]:
        self.groups.append([item.session for item in batch])
        self.threads.append(threading.current_thread() is not threading.main_thread())
        self.started.set()
        time.sleep(self.delay_s)
        return self.publish(batch)


async def test_the_publish_runs_off_the_loop_and_readers_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    slow = SlowPublish(store, monkeypatch, 0.3)
    threads, started = slow.threads, slow.started
    creating = asyncio.create_task(store.open_or_create("new"))
    ticks = 0
    while not started.is_set():  # the loop keeps running while the publish waits on the disk
        ticks += 1
        await asyncio.sleep(0.001)
    seen = await asyncio.gather(store.read("new"), store.open_if_exists("new"))
    assert all(record is not None and record.session == "new" for record in seen)
    record = await creating
    assert record.session == "new"
    assert threads == [True]
    assert ticks >= 1


async def test_a_turn_cancelled_while_its_record_is_published_still_leaves_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    started = SlowPublish(store, monkeypatch, 0.3).started
    creating = asyncio.create_task(store.open_or_create("cancelled"))
    assert await asyncio.to_thread(started.wait, 10)
    creating.cancel()
    with pytest.raises(asyncio.CancelledError):
        await creating
    record = await store.open_if_exists("cancelled")  # waits for the publish still under way
    assert record is not None and record.session == "cancelled"
    assert store.files.find("cancelled") is not None


async def test_records_asked_for_in_one_tick_are_published_as_one_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    groups = SlowPublish(store, monkeypatch, 0.0).groups
    names = [f"burst-{i}" for i in range(40)]
    records = await asyncio.gather(*(store.open_or_create(name) for name in names))
    assert [record.session for record in records] == names
    assert [sorted(group) for group in groups] == [sorted(names)]
    for name in names:  # each in place, readable from a store that never saw it created
        again = await FileSessionStore(tmp_path / "sessions", cwd=tmp_path).open_if_exists(name)
        assert again is not None and again.session == name
    assert not list((tmp_path / "sessions" / ".staging").iterdir())  # no temp file left


async def test_creators_that_come_while_a_group_is_written_form_the_next_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    slow = SlowPublish(store, monkeypatch, 0.2)
    groups, started = slow.groups, slow.started
    first = asyncio.create_task(store.open_or_create("a"))
    assert await asyncio.to_thread(started.wait, 10)
    later = [asyncio.create_task(store.open_or_create(name)) for name in ("b", "c", "d")]
    await asyncio.sleep(0.05)
    later.append(asyncio.create_task(store.open_or_create("e")))
    done = await asyncio.gather(first, *later)
    assert [record.session for record in done] == ["a", "b", "c", "d", "e"]
    assert groups == [["a"], ["b", "c", "d", "e"]]


async def test_one_failed_publication_fails_its_own_creator_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    real_link = os.link

    def link(src: object, dst: object, *args: object, **kwargs: object) -> None:
        if "broken" in str(dst):
            raise PermissionError(13, "Permission denied", str(dst))
        real_link(src, dst, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", link)
    outcomes = await asyncio.gather(
        *(store.open_or_create(name) for name in ("fine-1", "broken", "fine-2")), return_exceptions=True
    )
    assert [getattr(o, "session", None) for o in outcomes] == ["fine-1", None, "fine-2"]
    assert isinstance(outcomes[1], SessionError)
    assert str(outcomes[1]) == "cannot write the session store: permission denied"
    assert store.files.find("broken") is None
    assert not list((tmp_path / "sessions" / ".staging").iterdir())


async def test_a_failed_group_job_fails_every_creator_in_it_and_the_next_group_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    publish = store.files.publish_many
    calls = 0

    def flaky(batch: Sequence[Publication]) -> list[tuple[Path, bool] | Exception]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the disk went away")
        return publish(batch)

    monkeypatch.setattr(store.files, "publish_many", flaky)
    failed = await asyncio.gather(
        store.open_or_create("x"), store.open_or_create("y"), return_exceptions=True
    )
    assert [str(o) for o in failed] == ["the disk went away"] * 2
    record = await store.open_or_create("x")  # nothing stuck: the next creation publishes
    assert record.session == "x" and calls == 2


async def test_a_creation_never_queues_behind_the_default_executors_work(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    release = threading.Event()
    loop = asyncio.get_running_loop()
    blocked = [loop.run_in_executor(None, release.wait, 10) for _ in range(64)]  # every worker busy
    try:
        record = await asyncio.wait_for(store.open_or_create("fresh"), 5)
        assert record.session == "fresh"
    finally:
        release.set()
        await asyncio.gather(*blocked)
