"""Documents (PDFs) as a prompt carries them on the wire: the contract's ``DocumentRef`` JSON,
``{"mimeType": "application/pdf", "data": "<base64>", "name": "report.pdf"}``, in ``POST /invoke``,
``POST /control/invoke`` (``documents``) and a steer or follow-up's ``prompt.documents``.

:func:`parse_documents` rebuilds them from whatever a client sent, or says in one line what is
wrong with the first one that is not a document this agent takes:

* ``mimeType``: ``application/pdf`` (the one document type the providers take);
* ``data``: strict base64 (no ``data:`` URL prefix, no line breaks), not empty, a PDF (it starts
  with ``%PDF-``), at most :data:`MAX_WIRE_DOCUMENT_BYTES` once decoded;
* ``name`` (optional): the file's name as a transcript shows it and the model reads it (a path is
  cut to its last part; ``document-N.pdf`` without one);
* at most :data:`MAX_WIRE_DOCUMENTS` documents per prompt.

How a document reaches the model (a document block where the model takes PDFs, its text
otherwise) is the engine's, on every path alike (:mod:`fastagent_cli.engine.documents`).
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from collections.abc import Mapping
from typing import Any

from fastagent_cli.contract import DocumentRef

__all__ = [
    "DOCUMENT_MIME_TYPES",
    "MAX_WIRE_DOCUMENTS",
    "MAX_WIRE_DOCUMENT_BYTES",
    "parse_documents",
    "pdf_document",
]

DOCUMENT_MIME_TYPES = ("application/pdf",)
MAX_WIRE_DOCUMENTS = 10
MAX_WIRE_DOCUMENT_BYTES = 24 * 1024 * 1024
"""Decoded bytes of one PDF (a request carrying it, base64-inflated, stays within the providers'
32 MB; ``invoke --attach`` takes the same)."""
MAX_NAME_CHARS = 255
_SHAPE = 'an object {mimeType: "application/pdf", data: base64 string, name?: string}'


def parse_documents(raw: Any, where: str = "documents") -> tuple[DocumentRef, ...] | str:
    """The documents of ``raw`` (``None`` is none), or the message naming what is wrong (``where``
    is the field's name in it, such as ``prompt.documents``)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return f'"{where}" must be an array of {{mimeType, data, name?}} objects'
    if len(raw) > MAX_WIRE_DOCUMENTS:
        return f'"{where}" holds {len(raw)} documents: at most {MAX_WIRE_DOCUMENTS} go with one prompt'
    documents: list[DocumentRef] = []
    for index, item in enumerate(raw):
        document = _document(item, f"{where}[{index}]", index)
        if isinstance(document, str):
            return document
        documents.append(document)
    return tuple(documents)


def _document(item: Any, at: str, index: int) -> DocumentRef | str:
    if not isinstance(item, Mapping):
        return f'"{at}" must be {_SHAPE}'
    mime, data, name = item.get("mimeType"), item.get("data"), item.get("name")
    if not isinstance(mime, str) or not isinstance(data, str) or not isinstance(name, (str, type(None))):
        return f'"{at}" must be {_SHAPE}'
    mime = mime.strip().lower()
    if mime not in DOCUMENT_MIME_TYPES:
        return f'"{at}.mimeType" {mime!r} is not a document type this agent takes (application/pdf)'
    if data.startswith("data:"):
        return f'"{at}.data" must be the base64 alone, without the data: URL prefix'
    return pdf_document(data, name, index, at=at)


def pdf_document(
    data: str, name: str | None, index: int, *, at: str, data_field: str = "data", name_field: str = "name"
) -> DocumentRef | str:
    """The PDF of base64 ``data`` named ``name`` (``document-<index + 1>.pdf`` without one), or
    the message naming what is wrong; ``at`` is where it is in the request, ``data_field`` and
    ``name_field`` what the request calls its two fields (the OpenAI face: ``file_data``,
    ``filename``)."""
    if not data:
        return f'"{at}.{data_field}" is empty'
    # base64 of more than the cap is rejected before decoding it
    if len(data) > (MAX_WIRE_DOCUMENT_BYTES + 2) // 3 * 4:
        return f'"{at}" is larger than {MAX_WIRE_DOCUMENT_BYTES >> 20} MB'
    try:
        decoded = b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f'"{at}.{data_field}" is not valid base64'
    if not decoded.startswith(b"%PDF-"):
        return f'"{at}.{data_field}" is not a PDF (it does not start with %PDF-)'
    given = (name or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    if len(given) > MAX_NAME_CHARS or any(ord(c) < 32 for c in given):
        return (
            f'"{at}.{name_field}" must be a file name of at most {MAX_NAME_CHARS} characters, '
            "without control characters"
        )
    return DocumentRef(DOCUMENT_MIME_TYPES[0], data, given or f"document-{index + 1}.pdf")
