"""The stored-session listing (``/resume``, ``--continue``, the session port's ``list``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

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
