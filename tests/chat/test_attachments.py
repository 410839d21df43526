"""What a paste attaches (a dropped file's path, as terminals paste it) and what ``/attach`` keeps
for the next prompt."""

from __future__ import annotations

import base64
from pathlib import Path

from PIL import Image

from fastagent_cli.chat.attachments import REMOTE_BODY_BYTES, PendingAttachments, attach_command, pasted_path
from fastagent_cli.serving.body import MAX_BODY_BYTES
from tests.fakes.pdf import minimal_pdf


class Lines:
    def __init__(self) -> None:
        self.infos: list[str] = []
        self.errors: list[str] = []

    def info(self, text: str) -> None:
        self.infos.append(text)

    def error(self, text: str) -> None:
        self.errors.append(text)

    def rows(self, title: str, rows: list[tuple[str, str]]) -> None:
        self.infos.append(f"{title}: {', '.join(name for name, _ in rows)}")


def test_pasted_paths(tmp_path: Path) -> None:
    spaced = tmp_path / "my photo.png"
    spaced.write_bytes(b"x")
    assert pasted_path(f"'{spaced}'") == str(spaced)
    assert pasted_path(str(spaced).replace(" ", "\\ ") + "\n") == str(spaced)
    assert pasted_path("file://" + str(spaced).replace(" ", "%20")) == str(spaced)
    assert pasted_path("my photo.png") is None  # relative: text, not a drop
    assert pasted_path(f"{spaced}\nand more") is None
    assert pasted_path(str(tmp_path)) is None  # a directory
    assert pasted_path("look at /etc/hostname please") is None


async def test_attach_list_clear_and_take(tmp_path: Path) -> None:
    picture, notes = tmp_path / "a.png", tmp_path / "b.txt"
    Image.new("RGB", (2, 2)).save(picture)
    notes.write_text("hi")
    pending, lines = PendingAttachments(), Lines()
    await attach_command(pending, lines, "")
    assert lines.infos[-1].startswith("usage: /attach PATH")
    await attach_command(pending, lines, f"{picture} {tmp_path / 'missing.txt'} {notes}")
    assert pending.chip() == "📎 a.png · b.txt"
    assert lines.errors == [f"cannot attach {tmp_path / 'missing.txt'}: No such file or directory"]
    await attach_command(pending, lines, "")
    assert lines.infos[-1] == "Attached to the next message: a.png, b.txt"
    prompt = pending.prompt("see")
    assert prompt.text == 'see\n\n<file name="b.txt">\nhi\n</file>' and len(prompt.images) == 1
    assert pending.chip() == "" and pending.prompt("again").images == ()
    await attach_command(pending, lines, str(picture))
    await attach_command(pending, lines, "clear")
    assert lines.infos[-1] == "dropped 1 attachment" and pending.chip() == ""


async def test_a_pdf_is_a_document_of_the_next_prompt(tmp_path: Path) -> None:
    report, cut = tmp_path / "report.pdf", tmp_path / "cut.pdf"
    report.write_bytes(minimal_pdf("Quarterly revenue rose 12%"))
    cut.write_bytes(minimal_pdf("x")[:-8])  # no %%EOF
    pending, lines = PendingAttachments(), Lines()
    await attach_command(pending, lines, f"{report} {cut}")
    assert lines.infos == [
        f"attached report.pdf (PDF, {report.stat().st_size:,} bytes); it goes with your next message"
    ]
    assert lines.errors == [f"cannot attach {cut}: not a complete PDF file (no %%EOF at its end)"]
    assert pending.chip() == "📎 📄 report.pdf"
    await attach_command(pending, lines, "")
    assert lines.infos[-1] == "Attached to the next message: 📄 report.pdf"
    prompt = pending.prompt("summarize")
    assert prompt.text == "summarize" and prompt.images == ()
    (document,) = prompt.documents
    assert (document.name, document.mime_type) == ("report.pdf", "application/pdf")
    assert base64.b64decode(document.data) == report.read_bytes()
    assert pending.prompt("again").documents == ()


async def test_attach_refuses_what_a_serve_would_not_take(tmp_path: Path) -> None:
    """attach sends the message to a serve: a file that takes it past the body cap is refused as
    it is attached (chat, which sends nothing over HTTP, takes it)."""
    assert REMOTE_BODY_BYTES == MAX_BODY_BYTES
    half, scan = tmp_path / "half.pdf", tmp_path / "scan.pdf"
    half.write_bytes(b"%PDF-1.4\n" + b"0" * 450_000 + b"\n%%EOF\n")
    scan.write_bytes(b"%PDF-1.4\n" + b"0" * 900_000 + b"\n%%EOF\n")
    remote, lines = PendingAttachments(body_cap=REMOTE_BODY_BYTES), Lines()
    await attach_command(remote, lines, str(scan))
    assert lines.errors == [
        f"cannot attach {scan}: it is 1.2 MB as base64, and a message to a served agent carries at most "
        "1 MiB (files counted as base64): send a smaller file, or run fastagent invoke --attach in the "
        "agent's directory"
    ]
    await attach_command(remote, lines, f"{half} {half}")
    assert remote.chip() == "📎 📄 half.pdf" and "beside the 0.6 MB already attached" in lines.errors[-1]
    local = PendingAttachments()
    await attach_command(local, lines, str(scan))
    assert local.chip() == "📎 📄 scan.pdf"
