"""PDFs in the web chat, in a real headless Chromium against a real ``fastagent dev`` (issue 34):
PDFs picked with the 📎 file input show as chips with a document icon and the file name; one is
removed, then added again, before sending; they go whole with the message (``documents``), beside
an image, and the scripted model reports what it received, read back as PDFs; the transcript
names them, after a reload too; a PDF attached while a run streams goes with the steer. A PDF too
large for a message's body is refused as it is added (no request), a file that only claims to be
a PDF is refused, and a pasted PDF attaches."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.fakes.pdf import READER_MODEL, minimal_pdf
from tests.serving.webchat.browser import DevServer, browser_marks, dev_server, screenshot, wait_until
from tests.serving.webchat.test_browser import Page
from tests.serving.webchat.test_browser_images import chips

pytestmark = browser_marks()

# A PDF pasted (a ClipboardEvent carrying a file), as a browser fires one.
PASTE = """
const [data, name] = arguments;
const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
const files = new DataTransfer();
files.items.add(new File([bytes], name, { type: "application/pdf" }));
const event = new ClipboardEvent("paste", { clipboardData: files, bubbles: true, cancelable: true });
return !document.getElementById("input").dispatchEvent(event);
"""


# The reader, with a slow first round for "work slowly" (a tool call), so a steer can join the run.
SLOW_READER = (
    READER_MODEL
    + """
_read = reply


def reply(request):
    if request.last_user_text == "work slowly" and request.round == 0:
        return {"toolCalls": [{"name": "pause", "args": {"seconds": 4}}]}
    return _read(request)
"""
)
PAUSE = '''
import asyncio

from fastagent_cli import tool


@tool
async def pause(seconds: float) -> str:
    """Wait a while."""
    await asyncio.sleep(seconds)
    return "paused"
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    files = {
        "fastagent.toml": 'model = "scripted/reader:reply"\ncoding_tools = false\n',
        "reader.py": SLOW_READER,
        "tools/pause.py": PAUSE,
    }
    dev = dev_server(tmp_path_factory.mktemp("webchat-documents"), files)
    try:
        yield dev
    finally:
        dev.close()


@pytest.fixture
def page(driver: Any, server: DevServer) -> Iterator[Page]:
    shown = Page(driver, server)
    yield shown
    problems = [m for m in shown.errors() if "favicon" not in m and "401" not in m]
    assert not problems, problems


def toasts(page: Page) -> str:
    return " | ".join(node.text for node in page.all("#toasts .toast"))


def test_upload_remove_re_add_send_and_reload(page: Page, tmp_path: Path) -> None:
    session = f"t-{uuid.uuid4().hex[:10]}"
    page.open(session).ready()
    report, notes = tmp_path / "q3 report.pdf", tmp_path / "notes.pdf"
    report.write_bytes(minimal_pdf("Quarterly revenue rose 12%"))
    notes.write_bytes(minimal_pdf("Costs fell"))
    photo = tmp_path / "blue.png"
    Image.new("RGB", (30, 20), "blue").save(photo)
    page.find("#attach-file").send_keys("\n".join([str(report), str(notes), str(photo)]))
    wait_until(lambda: chips(page) == ["q3 report.pdf", "notes.pdf", "blue.png"], "three chips")
    docs = page.all("#attachments .attachment.document")
    assert [d.get_attribute("title") for d in docs] == ["q3 report.pdf", "notes.pdf"]
    assert all(d.find_elements("css selector", ".attachment-doc svg") for d in docs)  # the icon
    assert not docs[0].find_elements("css selector", "img")  # no thumbnail for a PDF
    screenshot(page.driver, "documents-01-chips")
    page.click('#attachments .attachment[title="q3 report.pdf"] .attachment-remove')
    wait_until(lambda: chips(page) == ["notes.pdf", "blue.png"], "the report removed")
    page.find("#attach-file").send_keys(str(report))  # and added again
    wait_until(lambda: chips(page) == ["notes.pdf", "blue.png", "q3 report.pdf"], "the report again")
    page.send("read these")
    page.wait_text(
        f"read notes.pdf (application/pdf, {notes.stat().st_size} bytes): Costs fell; "
        f"q3 report.pdf (application/pdf, {report.stat().st_size} bytes): Quarterly revenue rose 12% "
        "and 1 images with read these"
    )
    assert chips(page) == [] and not page.visible("#attachments")

    def names() -> list[str]:
        return [n.text for n in page.all(".msg.user .msg-document-name")]

    wait_until(lambda: names() == ["notes.pdf", "q3 report.pdf"], "the sent PDFs named")
    assert len(page.all(".msg.user .msg-image")) == 1
    screenshot(page.driver, "documents-02-sent")
    page.open(session).ready()  # after a reload, from the session's entries
    wait_until(lambda: names() == ["notes.pdf", "q3 report.pdf"], "the PDFs named after a reload")
    assert "read these" in page.text(".msg.user")
    titles = [n.get_attribute("title") for n in page.all(".msg.user .msg-document")]
    assert titles == ["notes.pdf (application/pdf, 1 KB)", "q3 report.pdf (application/pdf, 1 KB)"]


def test_a_pdf_too_large_or_not_a_pdf_is_refused_as_it_is_added(page: Page, tmp_path: Path) -> None:
    page.open(f"t-{uuid.uuid4().hex[:10]}").ready()
    big = tmp_path / "scan.pdf"
    big.write_bytes(b"%PDF-1.4\n" + b"0" * 900_000 + b"\n%%EOF\n")  # 1.2 MB as base64
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"PK\x03\x04 a zip, named .pdf")
    page.find("#attach-file").send_keys(f"{big}\n{fake}")
    wait_until(lambda: "fake.pdf is not a PDF" in toasts(page), "the refusals")
    said = toasts(page)
    assert "scan.pdf is too large to send: a message carries at most 1 MiB" in said, said
    assert "this PDF is 1.2 MB as base64" in said and "PDFs are not shrunk" in said
    assert chips(page) == [] and not page.visible("#attachments")


def test_a_pasted_pdf_attaches(page: Page) -> None:
    page.open(f"t-{uuid.uuid4().hex[:10]}").ready()
    data = base64.b64encode(minimal_pdf("pasted words")).decode()
    assert page.driver.execute_script(PASTE, data, "clip.pdf") is True  # taken from the box
    wait_until(lambda: chips(page) == ["clip.pdf"], "a chip for the pasted PDF")
    page.send("pasted one")
    page.wait_text("read clip.pdf (application/pdf, ")
    page.wait_text("pasted words and 0 images with pasted one")


def test_a_pdf_attached_while_a_run_streams_goes_with_the_steer(page: Page, tmp_path: Path) -> None:
    page.open(f"t-{uuid.uuid4().hex[:10]}").ready()
    page.send("work slowly")
    wait_until(lambda: page.attr("details.tool", "data-status") == "running", "the tool running")
    assert page.text("#send") == "Steer"
    minutes = tmp_path / "minutes.pdf"
    minutes.write_bytes(minimal_pdf("Ship on Friday"))
    page.find("#attach-file").send_keys(str(minutes))
    wait_until(lambda: chips(page) == ["minutes.pdf"], "the chip while the run streams")
    page.send("and this")
    page.wait_text(
        f"read minutes.pdf (application/pdf, {minutes.stat().st_size} bytes): Ship on Friday "
        "and 0 images with and this",
        within=30,
    )
    wait_until(lambda: [n.text for n in page.all(".msg.user .msg-document-name")] == ["minutes.pdf"], "named")
