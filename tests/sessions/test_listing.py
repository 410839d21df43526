"""The stored-session listing (``/resume``, ``--continue``, the session port's ``list``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.chat.sessions_list import format_age
from fastagent_cli.sessions.listing import list_sessions


def _session_file(directory: Path, name: str, session: str, prompt: str | None, age_s: float) -> Path:
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "u",
            "timestamp": "t",
            "cwd": "/",
            "fastagentSession": session,
        }
    ]
    if prompt is not None:
        lines.append(
            {
                "type": "message",
                "id": "a1",
                "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
            }
        )
    path = directory / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"torn', encoding="utf-8")
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    return path


def test_session_listing(tmp_path: Path) -> None:
    _session_file(tmp_path, "sold.jsonl", "old", "first question\nwith two lines", 7200)
    _session_file(tmp_path, "snew.jsonl", "new:id/x", "newest " * 20, 30)
    _session_file(tmp_path, "sempty.jsonl", "empty", None, 600)
    (tmp_path / "sbroken.jsonl").write_text("not json\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("ignored", encoding="utf-8")
    found = list_sessions(tmp_path)
    assert [s.session for s in found] == ["new:id/x", "empty", "old"]
    assert found[2].first_prompt == "first question with two lines"
    assert found[1].first_prompt == "(no prompt yet)"
    assert len(found[0].first_prompt) == 60 and found[0].first_prompt.endswith("…")
    assert format_age(found[2].modified).endswith("h ago")
    assert list_sessions(tmp_path / "missing") == []
    assert len(list_sessions(tmp_path, limit=1)) == 1


def test_the_index_reads_only_what_was_appended_and_is_never_stale(tmp_path: Path) -> None:
    from fastagent_cli.sessions.listing import SessionIndex
    from fastagent_cli.state.atomic import append_jsonl, dumps_line

    path = tmp_path / "sa.jsonl"
    header = {"type": "session", "version": 3, "id": "u", "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/"}
    header["fastagentSession"] = "a"
    user = {
        "type": "message",
        "id": "m1",
        "message": {"role": "user", "content": [{"type": "text", "text": "q1"}]},
    }
    nested = {
        "role": "assistant",
        "content": [{"type": "toolCall", "name": "x", "arguments": {"type": "message"}}],
    }
    path.write_text(dumps_line(header) + "\n" + dumps_line(user) + "\n", encoding="utf-8")
    index = SessionIndex(tmp_path)
    [first] = index.list()
    assert (first.session, first.message_count, first.first_prompt, first.name) == ("a", 1, "q1", None)
    assert first.created == 1767323045.0
    append_jsonl(
        path, [{"type": "message", "id": "m2", "message": nested}, {"type": "session_info", "name": "Hi"}]
    )
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"type":"message","id":"m3"')  # a line still being written is not counted yet
    [second] = index.list()
    assert (second.message_count, second.name) == (2, "Hi")  # a nested {"type":"message"} is no entry
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(',"message":{"role":"user","content":"later"}}\n{"id":"m4","type":"message","message":{}}\n')
    [third] = index.list()
    assert third.message_count == 4 and third.first_prompt == "q1"  # key order no matter
    replacement = tmp_path / "replacement"
    replacement.write_text(dumps_line(header) + "\n", encoding="utf-8")
    replacement.replace(path)  # a new file under the same name is read again from the start
    [fourth] = index.list()
    assert (fourth.message_count, fourth.name, fourth.first_prompt) == (0, None, "(no prompt yet)")
    path.unlink()
    assert index.list() == []


def test_a_kept_index_makes_a_new_process_start_warm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastagent_cli.sessions import listing
    from fastagent_cli.state.atomic import append_jsonl, dumps_line

    header = {
        "type": "session",
        "version": 3,
        "id": "u",
        "timestamp": "t",
        "cwd": "/",
        "fastagentSession": "k",
    }
    user = {"type": "message", "id": "m1", "message": {"role": "user", "content": "kept"}}
    path = tmp_path / "sk.jsonl"
    path.write_text(dumps_line(header) + "\n" + dumps_line(user) + "\n", encoding="utf-8")
    assert listing.SessionIndex(tmp_path, persist=True).list()[0].message_count == 1
    assert (tmp_path / ".index.json").is_file()
    reads: list[int] = []
    real = listing.SessionIndex._read

    def counting(self: listing.SessionIndex, scan: Any, target: Path) -> None:
        reads.append(scan.offset)
        real(self, scan, target)

    monkeypatch.setattr(listing.SessionIndex, "_read", counting)
    [again] = listing.SessionIndex(tmp_path, persist=True).list()  # a new process
    assert (again.session, again.message_count, again.first_prompt, reads) == ("k", 1, "kept", [])
    size = path.stat().st_size
    append_jsonl(path, [{"type": "message", "id": "m2", "message": {"role": "assistant", "content": []}}])
    [grown] = listing.SessionIndex(tmp_path, persist=True).list()
    assert grown.message_count == 2 and reads == [size]  # only the appended line was read
    (tmp_path / ".index.json").write_text("{torn", encoding="utf-8")  # a broken index is ignored
    assert listing.SessionIndex(tmp_path, persist=True).list()[0].message_count == 2


def test_ids_come_from_the_headers_of_pi_and_the_original(tmp_path: Path) -> None:
    from fastagent_cli.sessions.store import FileSessionStore
    from fastagent_cli.state.atomic import dumps_line

    store = FileSessionStore(tmp_path / "s", tmp_path)
    store.files.directory.mkdir(parents=True)
    stamp = "2026-03-15T10:00:00.000Z"
    for key in ("0199a8f2-7c1e-7a55-9a41-3c2b1d0e9f10", "telegram%3A-100"):  # pi's UUID, the original's
        header = {"type": "session", "version": 3, "id": key, "timestamp": stamp, "cwd": "/home/u/proj"}
        user = {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "timestamp": stamp,
            "message": {"role": "user", "content": "q"},
        }
        (store.files.directory / f"2026-03-15T10-00-00-000Z_{key}.jsonl").write_text(
            dumps_line(header) + "\n" + dumps_line(user) + "\n"
        )
    found = sorted(s.session for s in store.list_sessions())
    assert found == ["0199a8f2-7c1e-7a55-9a41-3c2b1d0e9f10", "telegram:-100"]
    assert (tmp_path / "s" / store.files.directory.name / ".index.json").is_file()  # kept beside the records
