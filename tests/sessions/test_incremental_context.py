"""A turn's cost does not grow with the conversation: the store keeps each file's record index
and context and moves them forward by the lines appended since. Whatever happens to a session
(turns, settings changes, branches, leaf moves, compactions, other writers, a replaced file),
the context a turn gets is exactly the one a fresh read of the whole file gives."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from fastagent_cli.sessions.record import TOOL_ACTIVATION_TYPE, SessionContext, SessionRecord
from fastagent_cli.sessions.store import FileSessionStore


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def assistant(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stopReason": "stop",
        "timestamp": 2,
    }


def fresh_context(path: Path, session: str) -> SessionContext:
    """The context of a record built from the whole file, with no memory of earlier reads."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return SessionRecord(session, lines[0], lines[1:])._full_context(None)


def same(a: SessionContext, b: SessionContext) -> bool:
    return (a.messages, a.model, a.thinking_level, a.activated_tools) == (
        b.messages,
        b.model,
        b.thinking_level,
        b.activated_tools,
    )


async def test_contexts_match_a_fresh_read_through_every_kind_of_change(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    rng = random.Random(10)
    record = await store.open_or_create("s")
    path = store.location("s")
    assert path is not None
    for step in range(160):
        action = rng.choice(
            ["turn"] * 6 + ["model", "thinking", "tools", "branch", "leaf", "compact", "other", "harness"]
        )
        if action == "turn":
            record.append_message(user(f"q{step}"))
            record.append_message(assistant(f"a{step}"))
        elif action == "model":
            record.append("model_change", provider="p", modelId=f"m{step}")
        elif action == "thinking":
            record.append("thinking_level_change", thinkingLevel=rng.choice(["low", "high"]))
        elif action == "tools":
            record.append("custom", customType=TOOL_ACTIVATION_TYPE, data={"names": [f"t{step}"]})
        elif action == "branch" and record.entries:
            record.branch(rng.choice(record.entries)["id"])
            record.append_message(user(f"branched {step}"))
        elif action == "leaf":
            positions = [e["id"] for e in record.entries if e["type"] == "message"]
            if positions:
                record.move_leaf(rng.choice(positions))
        elif action == "compact" and record.leaf_id is not None:
            kept = rng.choice(record.path())["id"]
            record.append("compaction", summary=f"summary {step}", firstKeptEntryId=kept, tokensBefore=10)
        elif action == "other":  # another process appends to the same file
            other = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
            theirs = await other.open_if_exists("s")
            assert theirs is not None
            theirs.append_message(user(f"from elsewhere {step}"))
        elif action == "harness":  # pi's harness moves the leaf with a ``leaf`` entry of its own
            positions = [e["id"] for e in record.entries if e["type"] == "message"]
            other = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
            theirs = await other.open_if_exists("s")
            assert theirs is not None
            theirs.append("leaf", targetId=rng.choice(positions) if positions else "gone")
        record = await store.open_if_exists("s")  # the next turn opens the session again
        assert record is not None
        assert same(record.context(), fresh_context(path, "s")), f"step {step}: {action}"
        # The in-memory record, written to during a turn, keeps its context right as well.
        record.append_message(user(f"pending {step}"))
        assert same(record.context(), record._full_context(None))
        record = await store.open_if_exists("s")
        assert record is not None


async def test_a_replaced_file_is_indexed_anew(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    record = await store.open_or_create("s")
    record.append_message(user("one"))
    assert [m["content"][0]["text"] for m in (await store.read("s")).context().messages] == ["one"]  # type: ignore[union-attr,index]
    path = store.location("s")
    assert path is not None
    header = path.read_text().splitlines()[0]
    replacement = path.with_name("replacement.tmp")
    entry = {"type": "message", "id": "x1", "parentId": None, "timestamp": "t", "message": user("other")}
    replacement.write_text(header + "\n" + json.dumps(entry) + "\n")
    replacement.replace(path)
    again = await store.read("s")
    assert again is not None
    assert [m["content"][0]["text"] for m in again.context().messages] == ["other"]  # type: ignore[index]


async def test_a_turn_record_does_not_change_the_kept_index(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "sessions", cwd=tmp_path)
    record = await store.open_or_create("s")
    record.append_message(user("kept"))
    turn = await store.open_if_exists("s")
    assert turn is not None
    turn.branch(None)  # a turn moving its leaf in memory only
    assert turn.context().messages == []
    shown = await store.read("s")
    assert shown is not None and len(shown.context().messages) == 1
