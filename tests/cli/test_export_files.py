"""The files of a Markdown export: where each image and PDF goes in ``<name>.files/``, how the
Markdown links them (a name's brackets escaped, a path with spaces in ``<...>``), and what is left
a note (base64 that does not decode)."""

from __future__ import annotations

import base64
from pathlib import Path

from fastagent_cli.assembly import StoredSession
from fastagent_cli.cli.export_files import ExportFiles, link_target
from fastagent_cli.cli.transcript import markdown

PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()


def stored(*blocks: dict[str, str]) -> StoredSession:
    entry = {
        "type": "message",
        "id": "e1",
        "timestamp": "2026-12-02T10:00:00Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "see"}, *blocks], "timestamp": 0},
    }
    return StoredSession(
        "s1", None, {"timestamp": "2026-12-02T10:00:00Z"}, [entry], [entry], 1, None, None, None
    )


def test_files_are_numbered_and_named_safely(tmp_path: Path) -> None:
    files = ExportFiles(tmp_path / "my chat.md")
    assert files.summary() == ""
    assert files.save("image/jpeg", PNG) == "my chat.files/1.jpg"
    assert files.save("application/pdf", PDF, "../../etc/q3: final?.pdf") == "my chat.files/2-q3_ final_.pdf"
    assert files.save("application/pdf", PDF, "notes") == "my chat.files/3-notes.pdf"
    assert files.save("application/pdf", PDF, "...") == "my chat.files/4-document.pdf"
    assert files.save("application/pdf", "not base64!", "x.pdf") is None
    assert files.files["my chat.files/2-q3_ final_.pdf"] == b"%PDF-1.4\n%%EOF\n"
    assert files.summary() == ", 1 image and 3 documents in my chat.files/"
    assert link_target("a.files/1.png") == "a.files/1.png"
    assert link_target("my chat.files/1.png") == "<my chat.files/1.png>"


def test_markdown_links_documents_and_keeps_notes_for_what_is_not_saved(tmp_path: Path) -> None:
    session = stored(
        {"type": "image", "mimeType": "image/png", "data": PNG},
        {"type": "document", "mimeType": "application/pdf", "data": PDF, "name": "q3 [final].pdf"},
        {"type": "document", "mimeType": "application/pdf", "data": "%%", "name": "broken.pdf"},
    )
    files = ExportFiles(tmp_path / "chat.md")
    text = markdown(session, files.save)
    assert "![image: image/png, 0 KB](chat.files/1.png)" in text
    assert "[document: q3 \\[final\\].pdf, 0 KB](<chat.files/2-q3 _final_.pdf>)" in text
    assert "\n[document: broken.pdf, 0 KB]\n" in text  # not base64: a note, no link
    assert sorted(files.files) == ["chat.files/1.png", "chat.files/2-q3 _final_.pdf"]
    assert "[document: q3 [final].pdf, 0 KB]" in markdown(session)  # to stdout: notes only
