"""Attachments in the real ``fastagent chat`` in a pseudo-terminal: ``/attach PATH`` and a pasted
image path (a file dropped on the terminal) show a chip above the input and go with the next
message, as image blocks and text in the session record; a file that cannot be attached is a
one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from tests.chat.harness import session_lines, write_agent
from tests.chat.pty_run import PtyProcess
from tests.conftest import cli_command, record_files

pytestmark = pytest.mark.slow


def test_attach_and_paste_in_a_terminal(tmp_path: Path) -> None:
    agent = write_agent(tmp_path / "agent")
    photo, dropped, notes = tmp_path / "photo.png", tmp_path / "dropped photo.jpg", tmp_path / "notes.md"
    Image.new("RGB", (3000, 2000), "green").save(photo)
    Image.new("RGB", (20, 10), "blue").save(dropped, format="JPEG")
    notes.write_text("remember the milk\n")
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4\n")
    term = PtyProcess([*cli_command(), "chat", str(agent)], cwd=tmp_path)
    try:
        term.read_until("› ")
        mark = len(term.text)
        term.send(f"/attach {tmp_path / 'doc.pdf'}\r")
        term.read_until("PDF files are not supported", start=mark)
        mark = len(term.text)
        term.send(f"/attach {photo} {notes}\r")
        term.read_until("attached notes.md (text, 18 bytes)", start=mark)
        term.read_until("📎 photo.png · notes.md", start=mark)  # the chip above the input
        mark = len(term.text)
        term.send(f"\x1b[200~'{dropped}'\x1b[201~")  # a terminal pastes a dropped file's path
        term.read_until("· dropped photo.jpg", start=mark)  # the chip redrawn (only what changed)
        mark = len(term.text)
        term.send("hello\r")
        term.read_until("Hello from the script.", start=mark)
        term.send("\x04")
        assert term.wait() == 0
    finally:
        term.close()
    (path,) = record_files(agent / ".fastagent" / "sessions")
    users = [
        e["message"] for e in session_lines(path) if e["type"] == "message" and e["message"]["role"] == "user"
    ]
    content = users[-1]["content"]
    assert content[0]["text"] == 'hello\n\n<file name="notes.md">\nremember the milk\n</file>'
    assert [(b["type"], b["mimeType"]) for b in content[1:]] == [
        ("image", "image/png"),
        ("image", "image/jpeg"),
    ]
    assert "\x1b[200~" not in content[0]["text"]
