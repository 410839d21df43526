"""A new record is published off the event loop; readers in the same process never see the
moment before it is in place."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.sessions.store import FileSessionStore


async def test_the_publish_runs_off_the_loop_and_readers_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    publish = store.files.publish
    threads: list[bool] = []
    started = threading.Event()

    def slow_publish(session: str, header: dict[str, Any], body: bytes = b"") -> tuple[Path, bool]:
        threads.append(threading.current_thread() is not threading.main_thread())
        started.set()
        time.sleep(0.3)  # a slow fsync
        return publish(session, header, body)

    monkeypatch.setattr(store.files, "publish", slow_publish)
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
    publish = store.files.publish
    started = threading.Event()

    def slow_publish(session: str, header: dict[str, Any], body: bytes = b"") -> tuple[Path, bool]:
        started.set()
        time.sleep(0.3)
        return publish(session, header, body)

    monkeypatch.setattr(store.files, "publish", slow_publish)
    creating = asyncio.create_task(store.open_or_create("cancelled"))
    assert await asyncio.to_thread(started.wait, 10)
    creating.cancel()
    with pytest.raises(asyncio.CancelledError):
        await creating
    record = await store.open_if_exists("cancelled")  # waits for the publish still under way
    assert record is not None and record.session == "cancelled"
    assert store.files.find("cancelled") is not None
