"""The ``anthropic-messages`` request body encoded once per conversation, not once per request.

:func:`encode_messages_request` is the JSON text of
:func:`~fastagent_cli.models.anthropic_request.build_messages_request`'s body, key for key, byte
for byte. What the conversation's last request encoded is kept in the request's ``memo`` (the
session record's): the messages it was built from, the transform's unanswered tool calls after
them, the encoded turns before the last one, and the last turn itself (open: a tool result and
the prompt after it are one ``user`` turn, so the next request may still add to it). A request
that only appends to that conversation, for the same model and authentication, transforms,
converts and encodes the new messages alone, whatever the length of the history (issue 35:
flat along a session, as ``openai-completions`` has been).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fastagent_cli.contract import json_text
from fastagent_cli.models._wire import MessageTransform, continues, spliced_body
from fastagent_cli.models.anthropic_request import (
    build_messages_request,
    normalize_tool_id,
    uses_claude_code,
    wire_turn,
)
from fastagent_cli.models.types import Message, ModelRequest

__all__ = ["encode_messages_request"]

_SLOT = ("anthropic-messages", "prefix")


@dataclass(frozen=True, slots=True)
class _Prefix:
    key: tuple[Any, ...]
    messages: list[Message]
    pending: dict[str, str]
    closed: str
    """The JSON texts of the turns before the last, joined by commas."""
    last: dict[str, Any] | None


def encode_messages_request(request: ModelRequest) -> tuple[str, dict[str, str], bytes]:
    """:func:`build_messages_request` with the body already encoded (the same JSON text)."""
    url, headers, body = build_messages_request(request, convert=False)
    return url, headers, spliced_body(body, "messages", _encoded_messages(request, uses_claude_code(request)))


def _encoded_messages(request: ModelRequest, claude_code: bool) -> str:
    model = request.model
    key = (model.provider, model.api, model.id, model.supports_images, model.supports_pdf, claude_code)
    messages: Sequence[Message] = request.messages
    memo = request.memo
    kept = memo.get(_SLOT) if memo is not None else None
    start, closed, last, pending = 0, "", None, None
    if isinstance(kept, _Prefix) and kept.key == key and continues(messages, kept.messages):
        start, closed, pending = len(kept.messages), kept.closed, kept.pending
        if kept.last is not None:  # copied: it may grow, and the memo's must not
            last = {"role": kept.last["role"], "content": list(kept.last["content"])}
    transform = MessageTransform(model, normalize_tool_id, pending)
    texts = [closed] if closed else []
    for message in messages[start:]:
        for turn in transform.feed(message):
            role, blocks = wire_turn(turn, request, claude_code)
            if not blocks:
                continue
            if last is not None and last["role"] == role:  # the API wants alternating roles
                last["content"].extend(blocks)
                continue
            if last is not None:
                texts.append(json_text(last))
            last = {"role": role, "content": blocks}
    closed = ",".join(texts)
    if memo is not None:
        memo[_SLOT] = _Prefix(key, list(messages), dict(transform.pending), closed, last)
    if last is None:
        return closed
    return f"{closed},{json_text(last)}" if closed else json_text(last)
