"""The files of a Markdown export (``sessions export --format md -o chat.md``): each image and
document (PDF) a record keeps as base64 is written to ``chat.files/`` next to the Markdown, which
links it: images as ``N.png`` (``N.jpg``, ...), documents under their own name as ``N-report.pdf``
(``N`` counts them in the order the transcript shows them, so two files of the same name never
collide). A block whose base64 does not decode is not saved: the Markdown keeps its note.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path

__all__ = ["ExportFiles", "link_target"]

_IMAGE_SUFFIX = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}
_UNSAFE = re.compile(r"[^\w.\- ]+")


class ExportFiles:
    """What :func:`~fastagent_cli.cli.transcript.markdown` saves, gathered before any is written
    (the command writes them, then the Markdown that links them)."""

    def __init__(self, output: Path) -> None:
        self.folder = f"{output.stem}.files"
        self.files: dict[str, bytes] = {}
        """Path relative to the Markdown -> bytes."""
        self.images = 0
        self.documents = 0

    def save(self, mime: str, data: str, name: str = "") -> str | None:
        """Keep one file (``name``: a document's, none for an image); its path relative to the
        Markdown, or None when ``data`` is not base64."""
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None
        number = len(self.files) + 1
        if mime.startswith("image/"):
            self.images += 1
            relative = f"{self.folder}/{number}{_IMAGE_SUFFIX.get(mime, '.bin')}"
        else:
            self.documents += 1
            relative = f"{self.folder}/{number}-{_safe_name(name, mime)}"
        self.files[relative] = raw
        return relative

    def summary(self) -> str:
        """``", 1 image and 2 documents in chat.files/"`` (empty without any)."""
        counts = [
            f"{count} {kind}{'s' if count != 1 else ''}"
            for count, kind in ((self.images, "image"), (self.documents, "document"))
            if count
        ]
        return f", {' and '.join(counts)} in {self.folder}/" if counts else ""


def _safe_name(name: str, mime: str) -> str:
    """``name`` as a file name of its own (no folders, no odd characters), ending ``.pdf``."""
    base = _UNSAFE.sub("_", name.replace("\\", "/").rsplit("/", 1)[-1]).strip(" .") or "document"
    suffix = ".pdf" if mime == "application/pdf" else ".bin"
    return base[:120] if base.lower().endswith(suffix) else base[:120] + suffix


def link_target(path: str) -> str:
    """``path`` as a Markdown link target (in ``<...>`` when it holds a space or a parenthesis)."""
    return f"<{path}>" if any(c in path for c in " ()<>") else path
