"""The commands ``attach`` shares with chat, in the real ``fastagent attach`` against the real
``fastagent start``: ``/thinking`` and ``/model`` write the session's settings over ``/control``,
``/navigate`` moves its leaf back so the next message branches, ``/attach`` refuses a file past the
serve's body cap and sends a PDF with a new
run (``POST /control/invoke``'s ``documents``) and an image, a text file and a PDF with a steer of
the running answer (``prompt.images``, ``prompt.documents``)."""

from __future__ import annotations

import base64
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.chat.harness import session_lines
from tests.chat.pty_run import PtyProcess
from tests.cli.test_attach import COLS, ROWS, Serve, control_state, served  # noqa: F401
from tests.conftest import cli_command, record_files
from tests.fakes.pdf import minimal_pdf

pytestmark = pytest.mark.slow


def _entries(serve: Serve, session: str) -> list[dict[str, Any]]:
    doc = json.loads(serve.control.read_text())
    request = urllib.request.Request(
        f"{doc['url']}/control/sessions/{session}/entries",
        headers={"Authorization": f"Bearer {doc['token']}"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        entries: list[dict[str, Any]] = json.loads(answer.read())["entries"]
    return entries


def test_attach_sets_thinking_and_model_navigates_and_attaches(served: Serve, tmp_path: Path) -> None:  # noqa: F811
    photo, notes = tmp_path / "photo.png", tmp_path / "notes.md"
    Image.new("RGB", (40, 30), "red").save(photo)
    notes.write_text("remember the milk\n")
    report, slides = tmp_path / "report.pdf", tmp_path / "slides.pdf"
    report.write_bytes(minimal_pdf("Quarterly revenue rose 12%"))
    slides.write_bytes(minimal_pdf("one slide"))
    (tmp_path / "big.pdf").write_bytes(b"%PDF-1.4\n" + b"0" * 900_000 + b"\n%%EOF\n")
    term = PtyProcess([*cli_command(), "attach", "s1", str(served.agent)], cwd=tmp_path, rows=ROWS, cols=COLS)
    try:
        term.read_until("attached via")
        mark = len(term.text)
        term.send("/thinking high\r")  # nothing to write to yet: one clear line
        term.read_until('✗ session "s1" does not exist: sessions are created by invoke', start=mark)
        for text in ("first", "second"):
            term.send(f"{text}\r")
            term.read_until(f"You said: {text}. Round 0.", start=mark)
        mark = len(term.text)
        term.send("/navigate 1\r")  # back to before the newest prompt
        term.read_until("moved session s1 back to before 'second'", start=mark)
        term.send(f"/attach {report}\r")
        term.read_until("📄 report.pdf", start=mark)  # the chip
        term.send("third\r")
        term.read_until("You said: third. Round 0.", start=mark)
        term.send("/thinking off\r")
        term.read_until("thinking off for session s1", start=mark)
        term.send("/model nowhere/nothing\r")
        term.read_until('✗ unknown model "nowhere/nothing"', start=mark)
        term.send("/attach big.pdf\r")  # more than a serve takes in one body: refused here
        term.read_until("cannot attach big.pdf: it is 1.2 MB as base64", start=mark)

        mark = len(term.text)
        term.send("slow please\r")
        term.read_until("nap seconds=6", start=mark)
        term.send(f"/attach {photo} {notes} {slides}\r")
        term.read_until("attached slides.pdf (PDF,", start=mark)
        term.send("look at this\r")  # a steer of the running answer, with what is attached
        term.read_until("You said: look at this", start=mark)
        term.send("/help\r")
        term.read_until("/navigate [n|id]", start=mark)
        term.send("\x03")
        assert term.wait() == 0
    finally:
        term.close()
    state = control_state(served, "s1")
    assert state["thinkingLevel"] == "off"
    entries = {e["id"]: e for e in _entries(served, "s1")}
    users = {e["data"]["text"]: e for e in entries.values() if e["kind"] == "user"}
    # third branches where second did: second is off the session's path
    assert users["third"]["parentId"] == users["second"]["parentId"]
    assert state["leafEntryId"] not in (users["second"]["id"], None)
    (path,) = record_files(served.agent / ".fastagent" / "sessions")
    steer = next(
        e["message"]
        for e in session_lines(path)
        if e["type"] == "message"
        and e["message"]["role"] == "user"
        and e["message"]["content"][0].get("text", "").startswith("look at this")
    )
    assert steer["content"][0]["text"] == 'look at this\n\n<file name="notes.md">\nremember the milk\n</file>'
    assert [(b["type"], b["mimeType"]) for b in steer["content"][1:]] == [
        ("image", "image/png"),
        ("document", "application/pdf"),
    ]
    assert base64.b64decode(steer["content"][2]["data"]) == slides.read_bytes()
    assert steer["content"][2]["name"] == "slides.pdf"
    # the run attach started took the PDF over /control/invoke; the entries name it
    assert users["third"]["data"]["documents"] == [
        {"mimeType": "application/pdf", "name": "report.pdf", "bytes": report.stat().st_size}
    ]
    assert "documents" not in users["second"]["data"]
