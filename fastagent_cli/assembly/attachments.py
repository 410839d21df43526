"""Files a user attaches to a prompt (``invoke --attach FILE``, chat's ``/attach``): images
become the contract's images (the engine fits them to the providers' limits), text files join the
prompt's text, PDFs become the prompt's documents (for callers that take them: sent as documents
where the model takes them, as their text otherwise; see :mod:`fastagent_cli.engine.documents`).

A text file is added after the message as ``<file name="notes.md">…</file>`` (UTF-8, at most
:data:`MAX_TEXT_CHARS` characters); a PDF must be whole (``%PDF-`` to ``%%EOF``) and at most
:data:`MAX_PDF_BYTES`; anything else that is neither an image nor text (an archive) is refused
with the reason, before any model is asked.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from fastagent_cli.contract import DocumentRef, ImageRef
from fastagent_cli.errors import UsageError

__all__ = [
    "IMAGE_TYPES",
    "MAX_PDF_BYTES",
    "MAX_TEXT_CHARS",
    "Attached",
    "image_type",
    "read_attachment",
    "read_attachments",
]

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
}
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"BM", "image/bmp"),
)
MAX_TEXT_CHARS = 200_000
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_PDF_BYTES = 24 * 1024 * 1024
"""A request carrying it, base64-inflated, stays within the 32 MB the providers take."""


@dataclass(frozen=True, slots=True)
class Attached:
    images: tuple[ImageRef, ...]
    text: str
    """The text files, as they follow the message (empty without any)."""
    documents: tuple[DocumentRef, ...] = ()


def read_attachments(paths: tuple[str, ...]) -> Attached:
    """Every file of ``paths`` (UsageError naming the first that cannot be attached)."""
    read = [read_attachment(given, documents=True) for given in paths]
    images = tuple(item for item in read if isinstance(item, ImageRef))
    documents = tuple(item for item in read if isinstance(item, DocumentRef))
    return Attached(images, "".join(item for item in read if isinstance(item, str)), documents)


@overload
def read_attachment(given: str, documents: Literal[False] = False) -> ImageRef | str: ...
@overload
def read_attachment(given: str, documents: bool) -> ImageRef | DocumentRef | str: ...
def read_attachment(given: str, documents: bool = False) -> ImageRef | DocumentRef | str:
    """One file: an image, the text block a text file adds to the message, or with ``documents``
    a PDF (refused without: the caller takes none)."""
    path = Path(given).expanduser()
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise UsageError(f"cannot attach {given}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
        data = path.read_bytes()
    except IsADirectoryError:
        raise UsageError(f"cannot attach {given}: it is a directory") from None
    except OSError as exc:
        raise UsageError(f"cannot attach {given}: {exc.strerror or exc}") from None
    mime = image_type(path.name, data)
    if mime is not None:
        return ImageRef(mime, base64.b64encode(data).decode("ascii"))
    if documents and data.startswith(b"%PDF"):
        return _pdf_file(given, path.name, data)
    return _text_file(given, path.name, data)


def _pdf_file(given: str, name: str, data: bytes) -> DocumentRef:
    if len(data) > MAX_PDF_BYTES:
        raise UsageError(
            f"cannot attach {given}: a PDF larger than {MAX_PDF_BYTES // (1024 * 1024)} MB "
            "(the providers take 32 MB a request)"
        )
    if not data.startswith(b"%PDF-") or b"%%EOF" not in data[-2048:]:
        raise UsageError(f"cannot attach {given}: not a complete PDF file (no %%EOF at its end)")
    return DocumentRef("application/pdf", base64.b64encode(data).decode("ascii"), name)


def image_type(name: str, data: bytes) -> str | None:
    """The MIME type of an image file (its first bytes first, then its extension), else None."""
    for signature, mime in _SIGNATURES:
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[4:12] in (b"ftypheic", b"ftypheix", b"ftypmif1"):
        return "image/heic"
    return IMAGE_TYPES.get(Path(name).suffix.lower()) if not _looks_like_text(data) else None


def _looks_like_text(data: bytes) -> bool:
    return b"\x00" not in data[:8192]


def _text_file(given: str, name: str, data: bytes) -> str:
    if data.startswith(b"%PDF"):
        raise UsageError(
            f"cannot attach {given}: PDF files are not supported (attach its text, or an image of it)"
        )
    if not _looks_like_text(data):
        raise UsageError(f"cannot attach {given}: it is neither an image nor a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"cannot attach {given}: it is not UTF-8 text") from None
    if len(text) > MAX_TEXT_CHARS:
        raise UsageError(f"cannot attach {given}: longer than {MAX_TEXT_CHARS:,} characters")
    safe = name.replace('"', "'")
    return f'\n\n<file name="{safe}">\n{text.rstrip()}\n</file>'
