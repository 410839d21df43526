"""Images in the web chat, in a real headless Chromium against a real ``fastagent dev`` (issue 34):
images picked with the 📎 file input show as thumbnail chips, one is removed before sending, the
others go with the message (a large one fitted to 1568 px on the way) and the scripted model
reports what it received; the transcript shows them as thumbnails, after a reload too; a pasted
image (a ClipboardEvent carrying a file) attaches the same way, and a text paste is left alone."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.serving.test_control_invoke_images import LOOKER_MODEL
from tests.serving.webchat.browser import DevServer, browser_marks, dev_server, screenshot, wait_until
from tests.serving.webchat.test_browser import Page

pytestmark = browser_marks()

# A pasted screenshot: a PNG drawn on a canvas, in a ClipboardEvent as a browser fires one.
PASTE = """
const [width, height, done] = arguments;
const canvas = document.createElement("canvas");
canvas.width = width;
canvas.height = height;
const context = canvas.getContext("2d");
context.fillStyle = "#0a0";
context.fillRect(0, 0, width, height);
canvas.toBlob((blob) => {
  const files = new DataTransfer();
  files.items.add(new File([blob], "image.png", { type: "image/png" }));
  const withFile = new ClipboardEvent("paste", { clipboardData: files, bubbles: true, cancelable: true });
  const text = new DataTransfer();
  text.setData("text/plain", "just words");
  const withText = new ClipboardEvent("paste", { clipboardData: text, bubbles: true, cancelable: true });
  const input = document.getElementById("input");
  done({ file: !input.dispatchEvent(withFile), text: !input.dispatchEvent(withText) });
}, "image/png");
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    files = {
        "fastagent.toml": 'model = "scripted/looker:reply"\ncoding_tools = false\n',
        "looker.py": LOOKER_MODEL,
    }
    dev = dev_server(tmp_path_factory.mktemp("webchat-images"), files)
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


def picture(folder: Path, name: str, size: tuple[int, int], color: str) -> str:
    path = folder / name
    Image.new("RGB", size, color).save(path)
    return str(path)


def chips(page: Page) -> list[str]:
    return [chip.get_attribute("title") for chip in page.all("#attachments .attachment")]


def test_upload_remove_send_and_reload(page: Page, tmp_path: Path) -> None:
    session = f"t-{uuid.uuid4().hex[:10]}"
    page.open(session).ready()
    assert page.visible("#attach") and not page.visible("#attachments")
    # a photo larger than the side limit, with more pixels than the body cap allows as a PNG
    big = tmp_path / "photo.png"
    Image.frombytes("RGB", (2400, 1200), os.urandom(2400 * 1200 * 3)).save(big)
    assert big.stat().st_size > 1 << 20
    files = [
        str(big),
        picture(tmp_path, "blue.png", (30, 20), "blue"),
        picture(tmp_path, "green.png", (50, 40), "green"),
    ]
    page.find("#attach-file").send_keys("\n".join(files))
    wait_until(lambda: chips(page) == ["photo.png", "blue.png", "green.png"], "three chips")
    thumbs = page.all("#attachments .attachment-thumb")
    assert all(page.driver.execute_script("return arguments[0].naturalWidth", t) > 0 for t in thumbs)
    screenshot(page.driver, "images-01-chips")
    page.click('#attachments .attachment[title="blue.png"] .attachment-remove')
    wait_until(lambda: chips(page) == ["photo.png", "green.png"], "the blue one removed")
    page.send("what are these")
    page.wait_text("saw image/jpeg 1568x784, image/png 50x40 with what are these")
    assert chips(page) == [] and not page.visible("#attachments")
    # the user entry (with its images) may be drawn just after the answer's text on a loaded box
    wait_until(lambda: len(page.all(".msg.user .msg-image")) == 2, "the sent thumbnails")

    def widths() -> list[int]:
        shown = page.all(".msg.user .msg-image")
        return [page.driver.execute_script("return arguments[0].naturalWidth", i) for i in shown]

    wait_until(lambda: widths() == [1568, 50], "the thumbnails decoded at their sent sizes")
    screenshot(page.driver, "images-02-sent")
    page.open(session).ready()  # after a reload, from the session's entries
    wait_until(lambda: len(page.all(".msg.user .msg-image")) == 2, "the thumbnails after a reload")
    assert "what are these" in page.text(".msg.user")


def test_a_pasted_image_attaches(page: Page) -> None:
    page.open(f"t-{uuid.uuid4().hex[:10]}").ready()
    prevented = page.driver.execute_async_script(PASTE, 64, 48)
    assert prevented == {"file": True, "text": False}  # the image is taken, the text left to the box
    wait_until(lambda: chips(page) == ["pasted-1.png"], "a chip for the pasted image")
    page.send("pasted one")
    page.wait_text("saw image/png 64x48 with pasted one")
    assert chips(page) == []
