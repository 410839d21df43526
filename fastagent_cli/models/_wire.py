"""Pieces shared by the wire clients: pi's cross-provider message transform, usage cost, output
budget, timestamps and argument parsing."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fastagent_cli.contract import json_text
from fastagent_cli.errors import ProviderError
from fastagent_cli.messages import StopReason, is_failed_turn, now_ms
from fastagent_cli.models.types import (
    AssistantBlock,
    AssistantMessage,
    Message,
    ModelInfo,
    ModelRequest,
    ToolResultMessage,
    Usage,
)

__all__ = [
    "MessageTransform",
    "NO_RESULT_TEXT",
    "StopReason",
    "calculate_cost",
    "document_note",
    "pdf_data_url",
    "default_max_tokens",
    "incomplete_stream",
    "is_same_model",
    "new_tool_call_id",
    "now_ms",
    "parse_arguments",
    "continues",
    "spliced_body",
    "transform_messages",
    "wire_arguments",
]

NO_RESULT_TEXT = "No result provided"


def document_note(block: Mapping[str, Any]) -> str:
    """What a model without PDF input reads for a PDF an earlier model of the session was sent
    (the engine sends a new prompt's PDFs to it as their text)."""
    return f"(document {block.get('name') or 'PDF'} omitted: this model does not accept PDF input)"


def pdf_data_url(block: Mapping[str, Any]) -> str:
    return f"data:{block['mimeType']};base64,{block['data']}"


INVALID_JSON_KEY = "_invalid_json"


def default_max_tokens(request: ModelRequest) -> int:
    """pi's ``streamSimple`` default: the request's value, else ``min(model.maxTokens, 32000)``;
    never more than the context window leaves (``request.output_limit``)."""
    wanted = request.max_tokens or min(request.model.max_tokens, 32_000)
    return min(wanted, request.output_limit) if request.output_limit else wanted


def new_tool_call_id(index: int) -> str:
    return f"call_{index}_{secrets.token_hex(6)}"


def parse_arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments: empty means ``{}``; anything but a JSON object is kept under
    ``_invalid_json`` so the engine's argument validation can report it to the model."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {INVALID_JSON_KEY: raw}
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: raw}


def wire_arguments(arguments: dict[str, Any]) -> str:
    """Tool-call arguments as the JSON text to send back; what :func:`parse_arguments` could not
    parse goes back exactly as the model produced it."""
    raw = arguments.get(INVALID_JSON_KEY)
    if len(arguments) == 1 and isinstance(raw, str):
        return raw
    return json.dumps(arguments, ensure_ascii=False)


def calculate_cost(model: ModelInfo, usage: Usage) -> Usage:
    """Fill ``usage.cost`` from ``model.cost`` ($ per million tokens) and return ``usage``."""
    rates = model.cost
    cost = usage["cost"]
    cost["input"] = rates.get("input", 0.0) * usage["input"] / 1e6
    cost["output"] = rates.get("output", 0.0) * usage["output"] / 1e6
    cost["cacheRead"] = rates.get("cacheRead", 0.0) * usage["cacheRead"] / 1e6
    cost["cacheWrite"] = rates.get("cacheWrite", 0.0) * usage["cacheWrite"] / 1e6
    cost["total"] = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    return usage


def incomplete_stream(provider: str) -> ProviderError:
    return ProviderError(f"{provider}: stream ended before the response was complete", retryable=True)


def is_same_model(message: AssistantMessage, model: ModelInfo) -> bool:
    return (
        message.get("provider") == model.provider
        and message.get("api") == model.api
        and message.get("model") == model.id
    )


def _synthetic_result(call_id: str, name: str) -> ToolResultMessage:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": NO_RESULT_TEXT}],
        "isError": True,
        "timestamp": now_ms(),
    }


def _adapt_assistant(
    message: AssistantMessage, model: ModelInfo, normalize_id: Callable[[str], str]
) -> AssistantMessage:
    same = is_same_model(message, model)
    blocks: list[AssistantBlock] = []
    for block in message["content"]:
        if block["type"] == "thinking":
            if same:
                blocks.append(block)
            elif block["thinking"].strip():
                blocks.append({"type": "text", "text": block["thinking"]})
        elif block["type"] == "toolCall":
            blocks.append({**block, "id": normalize_id(block["id"])})
        else:
            blocks.append(block)
    return {**message, "content": blocks}


class MessageTransform:
    """pi's ``transform-messages`` one message at a time (:func:`transform_messages`); its state
    is the tool calls not answered yet (``pending``: id -> name), so a conversion that keeps it
    can go on from where an earlier request of the conversation stopped."""

    def __init__(
        self,
        model: ModelInfo,
        normalize_id: Callable[[str], str] = lambda value: value,
        pending: dict[str, str] | None = None,
    ) -> None:
        self.model = model
        self.normalize_id = normalize_id
        self.pending: dict[str, str] = dict(pending or {})

    def _flush(self) -> list[Message]:
        out: list[Message] = [_synthetic_result(call_id, name) for call_id, name in self.pending.items()]
        self.pending.clear()
        return out

    def feed(self, message: Message) -> list[Message]:
        """What ``message`` becomes (nothing for a failed turn; unanswered calls' error results
        before the next user or assistant message)."""
        if message["role"] == "assistant":
            if is_failed_turn(message):
                return []
            out = self._flush()
            adapted = _adapt_assistant(message, self.model, self.normalize_id)
            for block in adapted["content"]:
                if block["type"] == "toolCall":
                    self.pending[block["id"]] = block["name"]
            out.append(adapted)
            return out
        if message["role"] == "toolResult":
            call_id = self.normalize_id(message["toolCallId"])
            self.pending.pop(call_id, None)
            return [{**message, "toolCallId": call_id}]
        out = self._flush()
        out.append(message)
        return out


def transform_messages(
    messages: Sequence[Message],
    model: ModelInfo,
    normalize_id: Callable[[str], str] = lambda value: value,
) -> list[Message]:
    """pi's ``transform-messages``: drop failed assistant turns, turn another model's thinking into
    text, normalise tool-call ids and answer every unanswered tool call with an error result before
    the next user or assistant message."""
    transform = MessageTransform(model, normalize_id)
    out: list[Message] = []
    for message in messages:
        out.extend(transform.feed(message))
    return out


def continues(messages: Sequence[Message], kept: Sequence[Message]) -> bool:
    """Whether ``messages`` starts with ``kept`` (the same message objects, or equal ones: a wire
    form is a function of the message), so a request can go on from what an earlier one encoded."""
    if len(messages) < len(kept):
        return False
    head = messages[: len(kept)]
    return (head if isinstance(head, list) else list(head)) == kept


def spliced_body(body: Mapping[str, Any], key: str, items: str) -> bytes:
    """``json_text(body)`` as bytes, with ``body[key]`` (a list left empty or holding a
    placeholder) written as ``[items]``: the items' JSON texts, already joined by commas."""
    keys = list(body)
    at = keys.index(key)
    head = json_text({k: body[k] for k in keys[:at]})
    tail = json_text({k: body[k] for k in keys[at + 1 :]})
    rest = f",{tail[1:]}" if len(tail) > 2 else "}"
    return f"{head[:-1]},{json_text(key)}:[{items}]{rest}".encode()
