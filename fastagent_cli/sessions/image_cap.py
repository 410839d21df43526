"""The size cap of a session record's entry: images (and PDFs) stay in the message as base64 (as
pi keeps images), up to :data:`MAX_ENTRY_IMAGE_BYTES` of base64 per entry; past it the largest are
replaced by a text note saying what was there, so one turn with many photos cannot grow a record
(and every later request that reads it) without bound. The run that took the images still sends
them; the record, and so every later turn, keeps the note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_ENTRY_IMAGE_BYTES", "OMITTED_DOCUMENT_NOTE", "OMITTED_NOTE", "cap_entry_images"]

MAX_ENTRY_IMAGE_BYTES = 16 * 1024 * 1024
"""Base64 characters of images one record entry keeps (about 12 MB of image data)."""

OMITTED_NOTE = (
    "[image not kept in the session record: {mime}, {size:.1f} MB (a record entry keeps at most "
    "16 MiB of images)]"
)
OMITTED_DOCUMENT_NOTE = (
    "[document {name} not kept in the session record: {size:.1f} MB (a record entry keeps at most "
    "16 MiB of images and documents)]"
)
_KEPT = ("image", "document")


def cap_entry_images(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` of an entry with its images capped (a copy when anything changed)."""
    message = fields.get("message")
    holder, key = (message, "content") if isinstance(message, Mapping) else (fields, "content")
    content = holder.get(key) if isinstance(holder, Mapping) else None
    if not isinstance(content, list):
        return fields
    sizes = [
        (len(b["data"]), i)
        for i, b in enumerate(content)
        if isinstance(b, Mapping) and b.get("type") in _KEPT and isinstance(b.get("data"), str)
    ]
    total = sum(size for size, _ in sizes)
    if total <= MAX_ENTRY_IMAGE_BYTES:
        return fields
    capped = list(content)
    for size, index in sorted(sizes, reverse=True):
        if total <= MAX_ENTRY_IMAGE_BYTES:
            break
        block, megabytes = capped[index], size * 3 / 4 / 1e6
        if block.get("type") == "document":
            note = OMITTED_DOCUMENT_NOTE.format(name=block.get("name", "PDF"), size=megabytes)
        else:
            note = OMITTED_NOTE.format(mime=str(block.get("mimeType", "image")), size=megabytes)
        capped[index] = {"type": "text", "text": note}
        total -= size
    if holder is fields:
        return {**fields, key: capped}
    return {**fields, "message": {**holder, key: capped}}
