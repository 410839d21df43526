"""OpenAI message content read into the contract's prompt and pi's messages.

Content is a string or a list of parts. Read are ``text`` / ``input_text`` / ``output_text``
parts (text), ``image_url`` (chat: ``{"image_url": {"url": ...}}``) and ``input_image``
(responses: ``{"image_url": "..."}``) parts (images), ``file`` (chat: ``{"file": {"file_data":
"data:application/pdf;base64,...", "filename": ...}}``) and ``input_file`` (responses:
``{"file_data": ..., "filename": ...}``) parts (PDFs), and an assistant's ``refusal``. Images go
through as the contract's :class:`~fastagent_cli.contract.ImageRef` when they are ``data:``
URLs with base64 content; an ``http(s)`` URL is refused (400): the server does not fetch URLs
a client names (that would let any caller make it reach its own network), so a client sends the
image itself. PDFs go through as :class:`~fastagent_cli.contract.DocumentRef`, checked as the
``documents`` of ``POST /invoke`` are; a ``file_id`` or ``file_url`` is refused (this face has no
Files API and fetches nothing). Anything else (audio, a part type this face does not know) is a
400 that names the part, never silently dropped.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from fastagent_cli.contract import DocumentRef, ImageRef, Prompt
from fastagent_cli.control.document_wire import pdf_document
from fastagent_cli.messages import AssistantMessage, Message, UserBlock, UserMessage, empty_usage, now_ms

__all__ = [
    "CLIENT_CONTEXT_HEADER",
    "Content",
    "RequestError",
    "Turn",
    "assistant_message",
    "read_content",
    "user_message",
    "history_messages",
    "with_context",
]

CLIENT_CONTEXT_HEADER = "[Context from the client application's system message]\n"
"""How a client's ``system`` / ``developer`` message (or ``instructions``) reaches the model: as
context before the conversation's first user message, never in place of the agent's own system
prompt."""

_TEXT_PARTS = {"text", "input_text", "output_text"}
_IMAGE_PARTS = {"image_url", "input_image"}
_FILE_PARTS = {"file", "input_file"}
_PDF_URL_PREFIX = "data:application/pdf;base64,"


class RequestError(Exception):
    """A 400 ``invalid_request_error`` naming the field (``param``)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the conversation the client sent, read."""

    role: str
    """``user`` or ``assistant``."""
    text: str
    images: tuple[ImageRef, ...] = ()
    documents: tuple[DocumentRef, ...] = ()

    def prompt(self) -> Prompt:
        return Prompt(self.text, self.images, documents=self.documents)


@dataclass(frozen=True, slots=True)
class Content:
    """One message's content, read: its text (parts joined by newlines), images and PDFs."""

    text: str
    images: tuple[ImageRef, ...] = ()
    documents: tuple[DocumentRef, ...] = ()


def read_content(content: Any, param: str, *, files: bool = True) -> Content:
    """One message's content; ``files``: images and PDFs may be in it (a user message's)."""
    if content is None:
        return Content("")
    if isinstance(content, str):
        return Content(content)
    if not isinstance(content, list):
        raise RequestError(f"{param} must be a string or an array of content parts", param)
    texts: list[str] = []
    found: list[ImageRef] = []
    documents: list[DocumentRef] = []
    for index, part in enumerate(content):
        where = f"{param}[{index}]"
        if not isinstance(part, dict):
            raise RequestError(f"{where} must be an object", where)
        kind = part.get("type")
        if kind in _TEXT_PARTS or kind == "refusal":
            value = part.get("refusal" if kind == "refusal" else "text")
            if not isinstance(value, str):
                raise RequestError(f"{where}.text must be a string", where)
            texts.append(value)
        elif kind in _IMAGE_PARTS and files:
            found.append(_image(part, where))
        elif kind in _FILE_PARTS and files:
            documents.append(_document(part, where, len(documents)))
        else:
            raise RequestError(f"{where}: content part type {kind!r} is not supported here", where)
    return Content("\n".join(texts), tuple(found), tuple(documents))


def _image(part: dict[str, Any], where: str) -> ImageRef:
    raw = part.get("image_url")
    url = raw.get("url") if isinstance(raw, dict) else raw
    if not isinstance(url, str):
        raise RequestError(f"{where}.image_url must carry the image's URL", where)
    if not url.startswith("data:"):
        raise RequestError(
            f"{where}: only data URLs are accepted for images (data:image/png;base64,...); "
            "the server does not fetch image URLs",
            where,
            "invalid_image_url",
        )
    header, comma, payload = url[5:].partition(",")
    mime, _, encoding = header.partition(";")
    if not comma or encoding.lower() != "base64" or not mime.lower().startswith("image/"):
        raise RequestError(f"{where}: an image data URL must be data:image/<type>;base64,<data>", where)
    try:
        base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise RequestError(f"{where}: the image data is not valid base64", where) from None
    return ImageRef(mime.lower(), payload)


def _document(part: dict[str, Any], where: str, index: int) -> DocumentRef:
    # chat completions nest the fields under "file"; the Responses API has them on the part
    fields = part.get("file") if part.get("type") == "file" else part
    if not isinstance(fields, dict):
        raise RequestError(f"{where}.file must be an object {{file_data, filename}}", where)
    if fields.get("file_id") is not None or fields.get("file_url") is not None:
        raise RequestError(
            f"{where}: files by file_id or file_url are not supported (this server has no Files "
            "API and fetches no URLs); send the file itself as file_data "
            "(data:application/pdf;base64,...)",
            where,
            "unsupported_file",
        )
    data, name = fields.get("file_data"), fields.get("filename")
    if name is not None and not isinstance(name, str):
        raise RequestError(f"{where}.filename must be a string", where)
    if not isinstance(data, str) or not data.startswith(_PDF_URL_PREFIX):
        raise RequestError(
            f"{where}.file_data must be a PDF as a data URL (data:application/pdf;base64,...): "
            "PDFs are the files this agent takes",
            where,
        )
    document = pdf_document(
        data[len(_PDF_URL_PREFIX) :], name, index, at=where, data_field="file_data", name_field="filename"
    )
    if isinstance(document, str):
        raise RequestError(document, where)
    return document


def with_context(turn: Turn, context: str | None) -> Turn:
    """``turn`` with the client's system text before it, marked as context."""
    if not context:
        return turn
    return Turn(
        turn.role, f"{CLIENT_CONTEXT_HEADER}{context}\n\n---\n\n{turn.text}", turn.images, turn.documents
    )


def user_message(turn: Turn) -> UserMessage:
    blocks: list[UserBlock] = []
    if turn.text or not turn.images:
        blocks.append({"type": "text", "text": turn.text})
    blocks.extend({"type": "image", "data": image.data, "mimeType": image.mime_type} for image in turn.images)
    blocks.extend(
        {"type": "document", "data": doc.data, "mimeType": doc.mime_type, "name": doc.name}
        for doc in turn.documents
    )
    return {"role": "user", "content": blocks, "timestamp": now_ms()}


def assistant_message(turn: Turn) -> AssistantMessage:
    """A reply the client says the assistant gave (recorded as the client's, not a model's)."""
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": turn.text}],
        "api": "openai-completions",
        "provider": "client",
        "model": "client-history",
        "usage": empty_usage(),
        "stopReason": "stop",
        "timestamp": now_ms(),
    }


def history_messages(turns: list[Turn]) -> list[Message]:
    return [user_message(t) if t.role == "user" else assistant_message(t) for t in turns]
