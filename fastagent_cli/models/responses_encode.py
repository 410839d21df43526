"""The Responses API request body (both dialects) encoded once per conversation, not once per
request: :func:`encode_responses_request` is the JSON text of
:func:`~fastagent_cli.models.responses_request.build_responses_request`'s body, byte for byte.

The record's ``memo`` keeps what the conversation's last request encoded: the messages it was
built from, the transform's unanswered tool calls and its count of transformed messages (an
assistant text without an item id of its own is named by its place), and the encoded items. A
request that only appends to that conversation, for the same model, converts and encodes the new
messages alone (issue 35: flat along a session). The items around the conversation (the system
or developer item first, the no-reasoning note last) are encoded per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fastagent_cli.contract import json_text
from fastagent_cli.models._wire import MessageTransform, continues, spliced_body
from fastagent_cli.models.responses_request import (
    HISTORY,
    build_responses_request,
    normalize_call_id,
    wire_items,
)
from fastagent_cli.models.types import Message, ModelRequest

__all__ = ["encode_responses_request"]

_SLOT = ("openai-responses", "prefix")


@dataclass(frozen=True, slots=True)
class _Prefix:
    key: tuple[Any, ...]
    messages: list[Message]
    pending: dict[str, str]
    transformed: int
    text: str
    """The items' JSON texts, joined by commas."""


def encode_responses_request(request: ModelRequest) -> tuple[str, dict[str, str], bytes]:
    """:func:`build_responses_request` with the body already encoded (the same JSON text)."""
    url, headers, body = build_responses_request(request, convert=False)
    history = _encoded_items(request)
    items = [history if item is HISTORY else json_text(item) for item in body["input"]]
    return url, headers, spliced_body(body, "input", ",".join(item for item in items if item))


def _encoded_items(request: ModelRequest) -> str:
    model = request.model
    key = (model.provider, model.api, model.id, model.supports_images, model.supports_pdf)
    messages: Sequence[Message] = request.messages
    memo = request.memo
    kept = memo.get(_SLOT) if memo is not None else None
    start, text, pending, index = 0, "", None, 0
    if isinstance(kept, _Prefix) and kept.key == key and continues(messages, kept.messages):
        start, text, pending, index = len(kept.messages), kept.text, kept.pending, kept.transformed
    transform = MessageTransform(model, normalize_call_id, pending)
    texts = [text] if text else []
    for message in messages[start:]:
        for turn in transform.feed(message):
            texts.extend(json_text(item) for item in wire_items(turn, index, request))
            index += 1
    text = ",".join(texts)
    if memo is not None:
        memo[_SLOT] = _Prefix(key, list(messages), dict(transform.pending), index, text)
    return text
