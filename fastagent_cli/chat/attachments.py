"""Attachments in the chat: ``/attach PATH`` (or pasting a file's path, as a terminal does when a
file is dropped on it) adds an image, a PDF or a text file to the next prompt; the pending ones
show as a chip above the input (``📎 photo.jpg · 📄 report.pdf · notes.md``); ``/attach`` lists
them, ``/attach clear`` drops them. They go with the next prompt sent (images as the prompt's
images, PDFs as its documents, text files in its text), then the chip is empty again.

In ``attach`` the message goes to a serve, whose request bodies are capped (1 MiB with the files
as base64: :data:`REMOTE_BODY_BYTES`), so a file that would take the message past it is refused as
it is attached, saying so, rather than by the serve once sent.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys

from fastagent_cli.assembly.attachments import image_type, read_attachment
from fastagent_cli.contract import DocumentRef, ImageRef, Prompt
from fastagent_cli.errors import UsageError

__all__ = [
    "ATTACH_USAGE",
    "REMOTE_BODY_BYTES",
    "PendingAttachments",
    "attach_command",
    "bind_paste",
    "pasted_path",
    "prompt_message",
]

REMOTE_BODY_BYTES = 1 << 20
"""What a serve takes in one request body (``fastagent_cli.serving.body.MAX_BODY_BYTES``)."""
_BODY_SLACK = 16 * 1024
"""The rest of a body: the message's text, the JSON around the files."""

ATTACH_USAGE = "usage: /attach PATH (an image, a PDF or a text file), /attach to list, /attach clear"


@dataclass(slots=True)
class PendingAttachments:
    """What the next prompt carries besides its text."""

    items: list[tuple[str, ImageRef | DocumentRef | str]] = field(default_factory=list)
    body_cap: int | None = None
    """The request body the message goes in (attach's: :data:`REMOTE_BODY_BYTES`), else None."""
    refused: str = ""
    """Why the last pasted file was not attached (shown above the input until the next message or
    attachment)."""

    def add(self, given: str) -> str:
        """Attach ``given`` (UsageError when it cannot be); the line that says so."""
        item = read_attachment(given, documents=True)
        name = Path(given).name or given
        if self.body_cap is not None:
            self._check_room(given, item, self.body_cap)
        self.items.append((name, item))
        self.refused = ""
        kind = "image" if isinstance(item, ImageRef) else "PDF" if isinstance(item, DocumentRef) else "text"
        return f"attached {name} ({kind}, {_size(given)}); it goes with your next message"

    def _check_room(self, given: str, item: ImageRef | DocumentRef | str, cap: int) -> None:
        size, taken = _wire_size(item), sum(_wire_size(other) for _, other in self.items)
        if size + taken + _BODY_SLACK <= cap:
            return
        beside = f" beside the {taken / 1e6:.1f} MB already attached" if taken else ""
        raise UsageError(
            f"cannot attach {given}: it is {size / 1e6:.1f} MB as base64{beside}, and a message to a "
            f"served agent carries at most {cap >> 20} MiB (files counted as base64): send a "
            "smaller file, or run fastagent invoke --attach in the agent's directory"
        )

    def names(self) -> list[str]:
        """What is pending, as the chip names it (a PDF marked 📄)."""
        return [f"📄 {name}" if isinstance(item, DocumentRef) else name for name, item in self.items]

    def chip(self) -> str:
        return "📎 " + " · ".join(self.names()) if self.items else ""

    def prompt(self, text: str) -> Prompt:
        """The prompt for ``text`` with everything pending (which is then cleared)."""
        images = tuple(item for _, item in self.items if isinstance(item, ImageRef))
        documents = tuple(item for _, item in self.items if isinstance(item, DocumentRef))
        texts = "".join(item for _, item in self.items if isinstance(item, str))
        self.items.clear()
        self.refused = ""
        return Prompt(text + texts, images, documents=documents)


def _wire_size(item: ImageRef | DocumentRef | str) -> int:
    return len(item.encode("utf-8")) if isinstance(item, str) else len(item.data)


def prompt_message(pending: PendingAttachments) -> StyleAndTextTuples:
    """The prompt's ``›``, under the chip of what is attached (when anything is) and why a pasted
    file was not (when one was not)."""
    chip = pending.chip()
    head: StyleAndTextTuples = (
        [("class:status.error", f"✗ {pending.refused}"), ("", "\n")] if pending.refused else []
    )
    if chip:
        head += [("class:status.hint", chip), ("", "\n")]
    return [*head, ("class:prompt", "› ")]


def bind_paste(kb: KeyBindings, pending: PendingAttachments) -> None:
    """A pasted path to an image or a PDF (a file dropped on the terminal) attaches it; any
    other paste is inserted as typed, as is the path of one that cannot be attached (the reason
    shows above the input)."""

    @kb.add(Keys.BracketedPaste)
    def _paste(event: KeyPressEvent) -> None:
        data = event.data.replace("\r\n", "\n").replace("\r", "\n")
        path = pasted_path(data)
        if path is not None and _attachable(path, _head(path)):
            try:
                pending.add(path)
            except UsageError as exc:  # named by its file name: the path is in the input already
                pending.refused = exc.message.replace(path, Path(path).name, 1)
            else:
                event.app.invalidate()
                return
        event.current_buffer.insert_text(data)


def _attachable(path: str, head: bytes) -> bool:
    return image_type(path, head) is not None or head.startswith(b"%PDF-")


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read(8192)
    except OSError:
        return b"\x00"  # unreadable: pasted as text


def _size(given: str) -> str:
    size = os.path.getsize(os.path.expanduser(given))
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size:,} bytes"


def pasted_path(text: str) -> str | None:
    """The file a paste names (a dropped file: a path, quoted or ``file://``), else None."""
    one = text.strip()
    if not one or "\n" in one or len(one) > 4096:
        return None
    if one.startswith("file://"):
        one = unquote(urlparse(one).path)
    else:
        try:
            parts = shlex.split(one)
        except ValueError:
            return None
        if len(parts) != 1:
            return None
        one = parts[0]
    path = Path(one).expanduser()
    return str(path) if path.is_absolute() and path.is_file() else None


class _Lines(Protocol):
    def info(self, text: str) -> None: ...

    def error(self, text: str) -> None: ...

    def rows(self, title: str, rows: list[tuple[str, str]]) -> None: ...


async def attach_command(pending: PendingAttachments, ui: _Lines, arg: str) -> None:
    """``/attach [PATH...|clear]``."""
    if not arg:
        if pending.items:
            ui.rows("Attached to the next message", [(name, "") for name in pending.names()])
        else:
            ui.info(ATTACH_USAGE)
        return
    if arg == "clear":
        count = len(pending.items)
        pending.items.clear()
        ui.info(f"dropped {count} attachment{'s' if count != 1 else ''}")
        return
    try:
        given = shlex.split(arg)
    except ValueError:
        given = [arg]
    for path in given:
        try:
            ui.info(pending.add(path))
        except UsageError as exc:
            ui.error(exc.message)
