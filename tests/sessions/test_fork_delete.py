"""Store writes the control plane needs: fork (ids kept, origin recorded, idempotent), delete,
durable leaf moves that pi reopens the same way, and the session name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastagent_cli.sessions.record import LEAF_MARKER_TYPE, SessionRecord
from fastagent_cli.sessions.store import FileSessionStore, ForkConflict, MemorySessionStore, SessionStore


async def three_turns(store: SessionStore, session: str) -> SessionRecord:
    record = await store.open_or_create(session)
    for text in ("one", "two", "three"):
        record.append_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0})
        record.append("label", targetId=record.leaf_id, label=f"after {text}")
        record.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"re {text}"}],
                "api": "x",
                "provider": "p",
                "model": "m",
                "usage": {},
                "stopReason": "stop",
                "timestamp": 0,
            }  # type: ignore[typeddict-item]
        )
    return record


@pytest.mark.parametrize("kind", ["file", "memory"])
async def test_fork_copies_the_path_and_is_idempotent(tmp_path: Path, kind: str) -> None:
    store: SessionStore = (
        FileSessionStore(tmp_path / "s", tmp_path) if kind == "file" else MemorySessionStore(tmp_path)
    )
    source = await three_turns(store, "src")
    at = [e for e in source.entries if e["type"] == "message"][3]["id"]  # "re two"
    assert await store.fork(source, at, "copy") is True
    copy = await store.read("copy")
    assert copy is not None
    assert [e["id"] for e in copy.entries] == [e["id"] for e in source.path(at) if e["type"] != "label"]
    assert copy.header["fastagentFork"] == {"session": "src", "entryId": at}
    assert await store.fork(source, at, "copy") is False  # the same fork again writes nothing
    with pytest.raises(ForkConflict):
        await store.fork(source, source.leaf_id or "", "copy")
    label = next(e["id"] for e in source.entries if e["type"] == "label")
    with pytest.raises(KeyError):
        await store.fork(source, label, "other")  # a label is not a position
    assert await store.delete("copy") is True
    assert await store.read("copy") is None and await store.delete("copy") is False


async def test_a_leaf_move_is_durable_and_pi_reads_it_the_same_way(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "s", tmp_path)
    record = await three_turns(store, "b")
    target = [e for e in record.entries if e["type"] == "message"][1]["id"]  # "re one"
    assert record.move_leaf(target) is True
    assert record.move_leaf(target) is False  # already there: nothing written
    path = store.location("b")
    assert path is not None
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    marker = lines[-1]
    assert (marker["type"], marker["customType"], marker["parentId"]) == ("custom", LEAF_MARKER_TYPE, target)
    reopened = await FileSessionStore(tmp_path / "s", tmp_path).open_if_exists("b")
    assert reopened is not None and reopened.leaf_id == target
    # pi takes the last entry as the leaf: the marker, whose path is the target's plus nothing
    pi_path = [e["id"] for e in reopened.path(marker["id"]) if e["type"] != "custom"]
    assert pi_path == [e["id"] for e in reopened.path()]
    entry = reopened.append_message({"role": "user", "content": "four", "timestamp": 0})
    assert entry["parentId"] == target
    with pytest.raises(KeyError):
        reopened.move_leaf(marker["id"])  # a marker is not a position


async def test_the_name_is_the_latest_non_empty_session_info(tmp_path: Path) -> None:
    record = await MemorySessionStore(tmp_path).open_or_create("n")
    assert record.name is None
    record.set_name("First")
    record.append("session_info", name="  ")
    assert record.name == "First"
    record.set_name("Second")
    assert record.name == "Second"
