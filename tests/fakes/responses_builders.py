"""Builders for OpenAI Responses API stream events, shaped like what api.openai.com sends (see the
recordings-shaped files in ``tests/models/data/openai_responses_*.sse``).

A reply is ``response.created`` and ``response.in_progress``, then one output item per reasoning
summary / message / function call (``output_item.added``, their deltas, the ``.done`` events,
``output_item.done``), then ``response.completed`` with the whole output and the usage.
``sequence_number`` counts from 0 across the stream.
"""

from __future__ import annotations

import json
from typing import Any

from .wire_builders import FakeCall, split_text

__all__ = ["responses_error_event", "responses_failed", "responses_reply"]

_RESPONSE_ID = "resp_fake0123456789"


def _response(status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": _RESPONSE_ID,
        "object": "response",
        "created_at": 1759064126,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "model": "fake-model",
        "output": output,
        "usage": usage,
    }


def _usage(usage: tuple[int, int] | tuple[int, int, int], reasoning_tokens: int) -> dict[str, Any]:
    input_tokens, output_tokens = usage[0], usage[1]
    cached = usage[2] if len(usage) > 2 else 0
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }


def _reasoning_events(
    index: int, parts: list[str], chunks: int, encrypted: str | None
) -> list[dict[str, Any]]:
    item_id = f"rs_fake{index}"
    added: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
    if encrypted is not None:
        added["encrypted_content"] = encrypted
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": index, "item": added}
    ]
    for n, part in enumerate(parts):
        base = {"item_id": item_id, "output_index": index, "summary_index": n}
        events.append(
            {
                "type": "response.reasoning_summary_part.added",
                **base,
                "part": {"type": "summary_text", "text": ""},
            }
        )
        events += [
            {"type": "response.reasoning_summary_text.delta", **base, "delta": piece, "obfuscation": "x"}
            for piece in split_text(part, chunks)
        ]
        events.append({"type": "response.reasoning_summary_text.done", **base, "text": part})
        events.append(
            {
                "type": "response.reasoning_summary_part.done",
                **base,
                "part": {"type": "summary_text", "text": part},
            }
        )
    done = {**added, "summary": [{"type": "summary_text", "text": p} for p in parts]}
    events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    return events


def _message_events(index: int, text: str, chunks: int) -> list[dict[str, Any]]:
    item_id = f"msg_fake{index}"
    base = {"item_id": item_id, "output_index": index, "content_index": 0}
    empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    events: list[dict[str, Any]] = [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            },
        },
        {"type": "response.content_part.added", **base, "part": empty},
    ]
    events += [
        {"type": "response.output_text.delta", **base, "delta": piece, "logprobs": [], "obfuscation": "x"}
        for piece in split_text(text, chunks)
    ]
    part = {**empty, "text": text}
    events += [
        {"type": "response.output_text.done", **base, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **base, "part": part},
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": {
                "id": item_id,
                "type": "message",
                "status": "completed",
                "content": [part],
                "role": "assistant",
            },
        },
    ]
    return events


def _call_events(index: int, call: FakeCall, chunks: int) -> list[dict[str, Any]]:
    item_id = f"fc_fake{index}"
    call_id = call.id or f"call_fake{index}"
    item = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": call_id,
    }
    item["name"] = call.name
    base = {"item_id": item_id, "output_index": index}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": index, "item": item}
    ]
    events += [
        {"type": "response.function_call_arguments.delta", **base, "delta": piece, "obfuscation": "x"}
        for piece in split_text(call.raw_arguments, chunks)
    ]
    events.append({"type": "response.function_call_arguments.done", **base, "arguments": call.raw_arguments})
    done = {**item, "status": "completed", "arguments": call.raw_arguments}
    events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    return events


def _number(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"type": e["type"], "sequence_number": n, **{k: v for k, v in e.items() if k != "type"}}
        for n, e in enumerate(events)
    ]


def responses_reply(
    text: str = "",
    *,
    reasoning: list[str] | None = None,
    encrypted: str | None = "gAAAAABfake-encrypted-reasoning",
    tool_calls: list[FakeCall] | None = None,
    usage: tuple[int, int] | tuple[int, int, int] = (10, 5),
    reasoning_tokens: int = 0,
    status: str = "completed",
    chunks: int = 3,
    final_event: str = "response.completed",
) -> list[dict[str, Any]]:
    """A whole streamed response: reasoning summary parts, a message, function calls, in that order."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response("in_progress", [], None)},
        {"type": "response.in_progress", "response": _response("in_progress", [], None)},
    ]
    output: list[dict[str, Any]] = []
    index = 0
    if reasoning is not None:
        events += _reasoning_events(index, reasoning, chunks, encrypted)
        index += 1
    if text:
        events += _message_events(index, text, chunks)
        index += 1
    for call in tool_calls or []:
        events += _call_events(index, call, chunks)
        index += 1
    output = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    events.append(
        {"type": final_event, "response": _response(status, output, _usage(usage, reasoning_tokens))}
    )
    return _number(events)


def responses_error_event(
    code: str = "server_error", message: str = "The server had an error"
) -> dict[str, Any]:
    """The top-level ``error`` event the API sends mid-stream."""
    return {"type": "error", "sequence_number": 99, "code": code, "message": message, "param": None}


def responses_failed(code: str = "server_error", message: str = "The model failed") -> dict[str, Any]:
    response = _response("failed", [], None)
    response["error"] = {"code": code, "message": message}
    return {"type": "response.failed", "sequence_number": 98, "response": response}


def as_sse(events: list[dict[str, Any]]) -> str:
    """The events as the API frames them (``event:`` line, ``data:`` line, blank line)."""
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n" for e in events)
