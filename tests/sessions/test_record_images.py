"""Images in session records: kept as base64 in the message (as pi does), at most 16 MiB of them
per entry (the largest replaced by a note past it); ``sessions export --format md`` writes them,
and the PDFs the record keeps, next to the Markdown (``<name>.files/``)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from PIL import Image

from fastagent_cli.messages import UserMessage
from fastagent_cli.sessions.image_cap import MAX_ENTRY_IMAGE_BYTES
from fastagent_cli.sessions.store import FileSessionStore
from tests.conftest import AgentFactory, RunCli
from tests.fakes.pdf import minimal_pdf


async def test_an_entry_keeps_at_most_16_mib_of_images(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "sessions", tmp_path)
    record = await store.open_or_create("big")
    five_mib = "A" * (5 * 1024 * 1024)
    message: UserMessage = {
        "role": "user",
        "content": [
            {"type": "text", "text": "four photos"},
            *({"type": "image", "data": five_mib + "A" * i * 4, "mimeType": "image/jpeg"} for i in range(4)),
        ],
        "timestamp": 0,
    }
    record.append_message(message)
    await record.flush()
    assert len(message["content"]) == 5 and all(b.get("data") for b in message["content"][1:])  # untouched
    (file,) = (tmp_path / "sessions").rglob("*.jsonl")
    line = json.loads(file.read_text().splitlines()[-1])
    content = line["message"]["content"]
    kept = [b for b in content if b["type"] == "image"]
    assert len(kept) == 3 and sum(len(b["data"]) for b in kept) <= MAX_ENTRY_IMAGE_BYTES
    assert content[4] == {  # the largest went
        "type": "text",
        "text": "[image not kept in the session record: image/jpeg, 3.9 MB (a record entry keeps at most "
        "16 MiB of images)]",
    }
    small: UserMessage = {
        "role": "user",
        "content": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}],
        "timestamp": 0,
    }
    entry = record.append_message(small)
    assert entry["message"] is small  # within the cap: stored as given


def test_export_md_writes_the_images_next_to_it(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    agent = make_agent()
    picture = tmp_path / "red.png"
    Image.new("RGB", (30, 20), "red").save(picture)
    done = run_cli("invoke", "look", str(agent), "--attach", str(picture), "--session", "pic")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "export" / "chat.md"
    out.parent.mkdir()
    exported = run_cli("sessions", "export", "pic", str(agent), "-o", str(out))
    assert exported.returncode == 0, exported.stderr
    assert f"exported session pic to {out} (md, 1 image in chat.files/)" in exported.stderr
    text = out.read_text()
    link = re.search(r"!\[image: image/png, 0 KB\]\((chat\.files/1\.png)\)", text)
    assert link is not None, text
    saved = out.parent / link.group(1)
    assert saved.read_bytes() == picture.read_bytes()
    with Image.open(saved) as opened:
        assert opened.size == (30, 20)
    stdout = run_cli("sessions", "export", "pic", str(agent), "--format", "md")
    assert "[image: image/png, 0 KB]" in stdout.stdout and "base64" not in stdout.stdout
    assert base64.b64encode(picture.read_bytes()).decode()[:40] not in stdout.stdout


async def test_the_cap_counts_documents_too(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "sessions", tmp_path)
    record = await store.open_or_create("pdfs")
    twelve_mib = "J" * (12 * 1024 * 1024)
    message: UserMessage = {
        "role": "user",
        "content": [
            {"type": "text", "text": "a report and a photo"},
            {"type": "document", "data": twelve_mib, "mimeType": "application/pdf", "name": "r.pdf"},
            {"type": "image", "data": "A" * (8 * 1024 * 1024), "mimeType": "image/png"},
        ],
        "timestamp": 0,
    }
    record.append_message(message)
    await record.flush()
    (file,) = (tmp_path / "sessions").rglob("*.jsonl")
    content = json.loads(file.read_text().splitlines()[-1])["message"]["content"]
    assert content[1] == {
        "type": "text",
        "text": "[document r.pdf not kept in the session record: 9.4 MB (a record entry keeps at most "
        "16 MiB of images and documents)]",
    }
    assert content[2]["type"] == "image" and len(content[2]["data"]) == 8 * 1024 * 1024


def test_export_md_writes_the_documents_next_to_it(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    agent = make_agent()
    picture, report, again = (
        tmp_path / "red.png",
        tmp_path / "q3 report.pdf",
        tmp_path / "again" / "q3 report.pdf",
    )
    Image.new("RGB", (30, 20), "red").save(picture)
    report.write_bytes(minimal_pdf("Quarterly revenue rose 12%"))
    again.parent.mkdir()
    again.write_bytes(minimal_pdf("the same name, another file"))
    attach = ["--attach", str(report), "--attach", str(picture), "--attach", str(again)]
    done = run_cli("invoke", "read", str(agent), *attach, "--session", "docs")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "export" / "my chat.md"
    out.parent.mkdir()
    exported = run_cli("sessions", "export", "docs", str(agent), "-o", str(out))
    assert exported.returncode == 0, exported.stderr
    assert (
        f"exported session docs to {out} (md, 1 image and 2 documents in my chat.files/)" in exported.stderr
    )
    text = out.read_text()
    links = re.findall(r"(!?)\[(image|document): ([^\]]*)\]\(<([^>]+)>\)", text)
    assert links == [
        ("!", "image", "image/png, 0 KB", "my chat.files/1.png"),
        ("", "document", "q3 report.pdf, 0 KB", "my chat.files/2-q3 report.pdf"),
        ("", "document", "q3 report.pdf, 0 KB", "my chat.files/3-q3 report.pdf"),
    ], text
    assert (out.parent / "my chat.files/2-q3 report.pdf").read_bytes() == report.read_bytes()
    assert (out.parent / "my chat.files/3-q3 report.pdf").read_bytes() == again.read_bytes()
    assert (out.parent / "my chat.files/1.png").read_bytes() == picture.read_bytes()
    stdout = run_cli("sessions", "export", "docs", str(agent), "--format", "md")  # no folder to write to
    assert "[document: q3 report.pdf, 0 KB]" in stdout.stdout and "](" not in stdout.stdout
    shown = run_cli("sessions", "show", "docs", str(agent))
    assert "[document: q3 report.pdf, 0 KB]" in shown.stdout and "JVBER" not in shown.stdout
