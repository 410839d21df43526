"""Records of the flat layout move into pi's layout once, atomically, losing nothing, whatever
point a crash interrupts them at."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.sessions import migrate
from fastagent_cli.sessions.encoding import encode_session_id
from fastagent_cli.sessions.layout import encode_id, workspace_dirname
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.state.atomic import dumps_line
from fastagent_cli.state.locks import FileLock
from tests.conftest import record_file, record_files

LONG = "thread:" + "x" * 250


class Crash(BaseException):
    """A process dying at this point (nothing after it runs, no cleanup either)."""


def legacy_record(root: Path, session: str, turns: int, **header_extra: Any) -> tuple[Path, bytes]:
    """A record as fastagent wrote it before pi's layout (``s<escaped id>.jsonl``)."""
    header = {
        "type": "session",
        "version": 3,
        "id": str(uuid.uuid4()),
        "timestamp": "2026-05-01T08:00:00.000Z",
        "cwd": "/old/place",
        "fastagentSession": session,
        **header_extra,
    }
    entries: list[dict[str, Any]] = []
    parent = None
    for i in range(turns):
        for role, text in (("user", f"q{i} of {session[:20]}"), ("assistant", f"a{i}")):
            entry_id = uuid.uuid4().hex[:8]
            message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": i}
            entries.append(
                {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t", "message": message}
            )
            parent = entry_id
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{encode_session_id(session)}.jsonl"
    data = "".join(dumps_line(line) + "\n" for line in [header, *entries]).encode()
    path.write_bytes(data)
    return path, data


def migrated_bytes(old: bytes, session: str) -> bytes:
    """What the moved record must hold: pi's header, then the old lines byte for byte."""
    header, _, body = old.partition(b"\n")
    fields = json.loads(header)
    new = {
        "type": "session",
        "version": 3,
        "id": encode_id(session),
        "timestamp": fields["timestamp"],
        "cwd": fields["cwd"],
    }
    new.update({k: v for k, v in fields.items() if k not in ("type", "version", "id", "timestamp", "cwd")})
    new.pop("fastagentSession")
    return (dumps_line(new) + "\n").encode() + body


@pytest.fixture
def legacy(tmp_path: Path) -> dict[str, bytes]:
    root = tmp_path / "sessions"
    made = {
        "telegram:-100": legacy_record(root, "telegram:-100", 2)[1],
        "room:thread": legacy_record(root, "room:thread", 1, parentSession="room")[1],
        LONG: legacy_record(root, LONG, 1)[1],
    }
    torn_path, torn = legacy_record(root, "torn", 1)
    torn_path.write_bytes(torn + b'{"type":"message","id":"dead","par')  # a crash mid-append, long ago
    made["torn"] = torn + b'{"type":"message","id":"dead","par'
    return made


def check_moved(tmp_path: Path, legacy: dict[str, bytes]) -> None:
    root = tmp_path / "sessions"
    assert not list(root.glob("s*.jsonl")) or [p.name for p in root.glob("s*.jsonl")] == ["s-junk.jsonl"]
    assert len(record_files(root)) == len(legacy)  # each once
    for session, old in legacy.items():
        assert record_file(root, session).read_bytes() == migrated_bytes(old, session)


async def test_flat_records_move_in_once_and_read_as_before(
    tmp_path: Path, legacy: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "sessions"
    (root / "s-junk.jsonl").write_text("not a record\n")
    with caplog.at_level(logging.WARNING, logger="fastagent.sessions"):
        store = FileSessionStore(root, tmp_path)
    assert sorted(s for s, _ in store.files.migration.moved) == sorted(legacy)
    assert "s-junk.jsonl stays where it is: not a session record" in caplog.text
    check_moved(tmp_path, legacy)
    assert (root / "s-junk.jsonl").read_text() == "not a record\n"  # never touched
    assert {p.parent.name for p in record_files(root)} == {workspace_dirname(str(tmp_path))}

    for session in legacy:
        record = await store.read(session)
        assert record is not None and record.session == session
        assert record.message_count == (4 if session == "telegram:-100" else 2)
    record = await store.open_if_exists("torn")
    assert record is not None
    record.append("label", targetId="x", label="after the move")  # the torn line does not swallow it
    assert [e.get("label") for e in (await store.read("torn")).entries][-1] == "after the move"  # type: ignore[union-attr]

    again = FileSessionStore(root, tmp_path)
    assert again.files.migration.moved == []  # once: nothing is left to move


@pytest.mark.parametrize("crash_on", [1, 2, 3])
async def test_a_crash_between_copy_and_removal_is_finished_on_the_next_start(
    tmp_path: Path, legacy: dict[str, bytes], monkeypatch: pytest.MonkeyPatch, crash_on: int
) -> None:
    calls = []
    real = migrate.remove_file

    def dying_remove(path: Path) -> None:
        calls.append(path)
        if len(calls) == crash_on:
            raise Crash
        real(path)

    monkeypatch.setattr(migrate, "remove_file", dying_remove)
    with pytest.raises(Crash):
        FileSessionStore(tmp_path / "sessions", tmp_path)
    assert (
        len(list((tmp_path / "sessions").glob("s*.jsonl"))) == len(legacy) - crash_on + 1
    )  # old still there
    monkeypatch.setattr(migrate, "remove_file", real)

    store = FileSessionStore(tmp_path / "sessions", tmp_path)
    assert len(store.files.migration.moved) == len(legacy) - crash_on + 1
    check_moved(tmp_path, legacy)


async def test_a_crash_before_the_copy_is_in_place_leaves_the_old_record(
    tmp_path: Path, legacy: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = migrate.publish_file
    calls = []

    def dying_publish(path: Path, data: bytes, **kwargs: Any) -> bool:
        calls.append(path)
        if len(calls) == 2:
            partial = path.with_name(f".{path.name}.999.1.tmp")
            partial.write_bytes(data[: len(data) // 2])  # the temp file it was writing
            raise Crash
        return real(path, data, **kwargs)

    monkeypatch.setattr(migrate, "publish_file", dying_publish)
    with pytest.raises(Crash):
        FileSessionStore(tmp_path / "sessions", tmp_path)
    monkeypatch.setattr(migrate, "publish_file", real)
    store = FileSessionStore(tmp_path / "sessions", tmp_path)
    check_moved(tmp_path, legacy)
    assert [s.session for s in store.list_sessions(None)].count("room:thread") == 1  # the temp is no record


async def test_entries_written_after_a_crash_are_kept_on_either_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    old_a, data_a = legacy_record(root, "a", 1)
    old_b, data_b = legacy_record(root, "b", 1)
    monkeypatch.setattr(migrate, "remove_file", lambda path: (_ for _ in ()).throw(Crash))
    with pytest.raises(Crash):
        FileSessionStore(root, tmp_path)  # a's copy is in place, a's old file still there
    monkeypatch.undo()
    copy_a = record_file(root, "a")
    assert old_a.exists() and copy_a.read_bytes() == migrated_bytes(data_a, "a")
    # an older fastagent, still running, appends a turn to the old file
    late = {"type": "label", "id": "late0001", "parentId": None, "timestamp": "t", "label": "old side"}
    with open(old_a, "a") as fh:
        fh.write(dumps_line(late) + "\n")
    store = FileSessionStore(root, tmp_path)
    assert not old_a.exists() and not old_b.exists()
    record = await store.read("a")
    assert record is not None and record.entries[-1]["label"] == "old side"
    assert record_file(root, "b").read_bytes() == migrated_bytes(data_b, "b")

    # the other way round: the copy got appended to (this version found it), the old file did not
    old_c, data_c = legacy_record(root, "c", 1)
    monkeypatch.setattr(migrate, "remove_file", lambda path: (_ for _ in ()).throw(Crash))
    with pytest.raises(Crash):
        FileSessionStore(root, tmp_path)
    monkeypatch.undo()
    copy_c = record_file(root, "c")
    with open(copy_c, "a") as fh:
        fh.write(dumps_line({**late, "label": "new side"}) + "\n")
    store = FileSessionStore(root, tmp_path)
    assert not old_c.exists()
    record = await store.read("c")
    assert record is not None and record.entries[-1]["label"] == "new side"


async def test_a_busy_session_moves_on_a_later_start(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    old, data = legacy_record(root, "busy", 1)
    lease = FileLock(root / ".locks" / f"{encode_session_id('busy')}.lock")
    assert lease.try_acquire()  # a turn of an older fastagent is writing it
    try:
        store = FileSessionStore(root, tmp_path)
        assert old.exists() and store.files.migration.left[0][1].startswith("session 'busy' is busy")
    finally:
        lease.release()
    FileSessionStore(root, tmp_path)
    assert not old.exists() and record_file(root, "busy").read_bytes() == migrated_bytes(data, "busy")


async def test_a_target_holding_another_record_is_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    old, data = legacy_record(root, "x", 1)
    target = migrated_bytes(data, "x")
    directory = root / workspace_dirname(str(tmp_path))
    directory.mkdir(parents=True)
    name = "2026-05-01T08-00-00-000Z_x.jsonl"
    (directory / name).write_bytes(b'{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}\n')
    store = FileSessionStore(root, tmp_path)
    assert old.read_bytes() == data and (directory / name).read_bytes() != target
    assert "holds another record" in store.files.migration.left[0][1]


def test_kill_9_between_copy_and_removal(tmp_path: Path) -> None:
    """A real SIGKILL in the window where a record exists twice; the next start sorts it out."""
    root = tmp_path / "sessions"
    made = {f"s{i}": legacy_record(root, f"s{i}", 1)[1] for i in range(6)}
    child = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from fastagent_cli.sessions import migrate
        real = migrate.remove_file
        def slow_remove(path):
            print("copied", path.name, flush=True)
            time.sleep(30)
            real(path)
        migrate.remove_file = slow_remove
        from fastagent_cli.sessions.store import FileSessionStore
        FileSessionStore({str(root)!r}, {str(tmp_path)!r})
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("copied ss0.jsonl")
    finally:
        proc.kill()
        proc.communicate()
    assert (root / "ss0.jsonl").exists() and len(record_files(root)) == 1  # both copies of s0 on disk
    FileSessionStore(root, tmp_path)
    assert not list(root.glob("s*.jsonl")) and len(record_files(root)) == 6
    for session, old in made.items():
        assert record_file(root, session).read_bytes() == migrated_bytes(old, session)
