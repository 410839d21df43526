"""Attachments in the real ``fastagent chat`` in a pseudo-terminal: ``/attach PATH`` and a pasted
image or PDF path (a file dropped on the terminal) show a chip above the input and go with the
next message, as image and document blocks and text in the session record; a file that cannot be
attached is a one-line error."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from PIL import Image

from tests.chat.harness import session_lines, write_agent
from tests.chat.pty_run import PtyProcess
from tests.conftest import cli_command, record_files
from tests.fakes.pdf import minimal_pdf

pytestmark = pytest.mark.slow


def test_attach_and_paste_in_a_terminal(tmp_path: Path) -> None:
    agent = write_agent(tmp_path / "agent")
    photo, dropped, notes = tmp_path / "photo.png", tmp_path / "dropped photo.jpg", tmp_path / "notes.md"
    Image.new("RGB", (3000, 2000), "green").save(photo)
    Image.new("RGB", (20, 10), "blue").save(dropped, format="JPEG")
    notes.write_text("remember the milk\n")
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4\n")  # cut short
    report, pasted = tmp_path / "report.pdf", tmp_path / "pasted notes.pdf"
    report.write_bytes(minimal_pdf("Quarterly revenue rose 12%"))
    pasted.write_bytes(minimal_pdf("page two"))
    term = PtyProcess([*cli_command(), "chat", str(agent)], cwd=tmp_path)
    try:
        term.read_until("› ")
        mark = len(term.text)
        term.send(f"/attach {tmp_path / 'doc.pdf'}\r")
        term.read_until("not a complete PDF file", start=mark)
        mark = len(term.text)
        term.send(f"/attach {photo} {notes} {report}\r")
        term.read_until("attached notes.md (text, 18 bytes)", start=mark)
        term.read_until(f"attached report.pdf (PDF, {report.stat().st_size} bytes)", start=mark)
        term.read_until("📎 photo.png · notes.md · 📄 report.pdf", start=mark)  # the chip above the input
        mark = len(term.text)
        term.send(f"\x1b[200~'{dropped}'\x1b[201~")  # a terminal pastes a dropped file's path
        term.read_until("· dropped photo.jpg", start=mark)  # the chip redrawn (only what changed)
        mark = len(term.text)
        term.send(f"\x1b[200~'{pasted}'\x1b[201~")  # a dropped PDF too
        term.read_until("· 📄 pasted notes.pdf", start=mark)
        mark = len(term.text)
        term.send(f"\x1b[200~{tmp_path / 'doc.pdf'}\x1b[201~")  # one that cannot go: the reason shows
        term.read_until("✗ cannot attach doc.pdf: not a complete PDF file", start=mark)
        term.send("\x15")  # the pasted path, inserted as text, wiped (Ctrl+U)
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
    assert [(b["type"], b["mimeType"], b.get("name")) for b in content[1:]] == [
        ("image", "image/png", None),
        ("image", "image/jpeg", None),
        ("document", "application/pdf", "report.pdf"),
        ("document", "application/pdf", "pasted notes.pdf"),
    ]
    assert base64.b64decode(content[3]["data"]) == report.read_bytes()
    assert "\x1b[200~" not in content[0]["text"]
