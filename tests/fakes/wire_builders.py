"""Builders for realistic provider stream events (OpenAI chat-completion chunks, Anthropic message
events) and error bodies, for the fakes in :mod:`tests.fakes.fake_providers`.

OpenAI chunks follow what api.openai.com sends: a role-only first chunk, content/tool-call deltas,
a finish chunk, then (with ``stream_options.include_usage``) a usage chunk with empty ``choices``.
Tool calls carry ``id``/``type``/``name`` in their first chunk only and then argument fragments, one
call after the other, each with its ``index``; ``llama_style=True`` instead repeats ``id`` and
``name`` on every chunk with explicit nulls, like llama-cpp-python.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FakeCall",
    "anthropic_error_body",
    "anthropic_error_event",
    "anthropic_message_end",
    "anthropic_message_start",
    "anthropic_reply",
    "anthropic_text_block",
    "anthropic_thinking_block",
    "anthropic_tool_use_block",
    "openai_chunk",
    "openai_error_body",
    "openai_reply",
    "openai_usage_chunk",
    "split_text",
]


@dataclass(frozen=True)
class FakeCall:
    """A tool call to stream: ``arguments`` as a dict or a raw (possibly broken) JSON string."""

    name: str
    arguments: dict[str, Any] | str
    id: str | None = None

    @property
    def raw_arguments(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


def split_text(text: str, parts: int) -> list[str]:
    """``text`` cut into ``parts`` (at least one) non-empty pieces of roughly equal size."""
    if not text:
        return []
    parts = max(1, min(parts, len(text)))
    size, rest = divmod(len(text), parts)
    pieces, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < rest else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


# ----------------------------------------------------------------------------- OpenAI


def openai_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    id: str | None = "chatcmpl-fake",
    model: str = "fake-model",
    usage: dict[str, Any] | None = None,
    with_choice: bool = True,
) -> dict[str, Any]:
    chunk: dict[str, Any] = {"object": "chat.completion.chunk", "created": 1700000000, "model": model}
    if id is not None:
        chunk["id"] = id
    choice = {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}
    chunk["choices"] = [choice] if with_choice else []
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def openai_usage_chunk(
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    *,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
) -> dict[str, Any]:
    """The final usage-only chunk (empty ``choices``) sent with ``include_usage``."""
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
    }
    return openai_chunk(usage=usage, with_choice=False)


def _openai_tool_chunks(calls: list[FakeCall], parts: int, llama_style: bool) -> list[dict[str, Any]]:
    chunks = []
    for index, call in enumerate(calls):
        call_id = call.id or f"call_fake_{index}"
        fragments = split_text(call.raw_arguments, parts) or [""]
        for n, fragment in enumerate(fragments):
            if llama_style:
                entry: dict[str, Any] = {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": fragment},
                }
                delta: dict[str, Any] = {"role": None, "content": None, "tool_calls": [entry]}
            elif n == 0:
                entry = {"index": index, "id": call_id, "type": "function"}
                entry["function"] = {"name": call.name, "arguments": ""}
                chunks.append(openai_chunk({"tool_calls": [entry]}))
                delta = {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
            else:
                delta = {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
            chunks.append(openai_chunk(delta))
    return chunks


def openai_reply(
    text: str = "",
    *,
    parts: int = 3,
    reasoning: str = "",
    reasoning_field: str = "reasoning_content",
    tool_calls: list[FakeCall] | None = None,
    finish_reason: str | None = None,
    usage: tuple[int, int] | None = None,
    llama_style: bool = False,
) -> list[dict[str, Any]]:
    """A whole answer: role chunk, reasoning deltas, text deltas, tool-call deltas, finish chunk
    (``tool_calls`` when there are calls, else ``stop``) and, if ``usage=(prompt, completion)``, a
    usage-only chunk. ``[DONE]`` is added by ``FakeOpenAI.enqueue_stream``."""
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({reasoning_field: piece}) for piece in split_text(reasoning, parts)]
    chunks += [openai_chunk({"content": piece}) for piece in split_text(text, parts)]
    chunks += _openai_tool_chunks(list(tool_calls or []), parts, llama_style)
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    chunks.append(openai_chunk({}, finish_reason=reason))
    if usage is not None:
        chunks.append(openai_usage_chunk(*usage))
    return chunks


def openai_error_body(
    message: str, *, type: str = "invalid_request_error", code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


# ----------------------------------------------------------------------------- Anthropic


def anthropic_message_start(
    *,
    input_tokens: int = 10,
    cache_read: int = 0,
    cache_write: int = 0,
    model: str = "fake-claude",
    id: str = "msg_fake",
) -> dict[str, Any]:
    usage = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "output_tokens": 1,
    }
    message: dict[str, Any] = {
        "id": id,
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
    }
    message.update({"stop_reason": None, "stop_sequence": None, "usage": usage})
    return {"type": "message_start", "message": message}


def _block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events = [{"type": "content_block_start", "index": index, "content_block": start}]
    events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
    events.append({"type": "content_block_stop", "index": index})
    return events


def anthropic_text_block(index: int, text: str, *, parts: int = 3) -> list[dict[str, Any]]:
    deltas = [{"type": "text_delta", "text": piece} for piece in split_text(text, parts)]
    return _block(index, {"type": "text", "text": ""}, deltas)


def anthropic_thinking_block(
    index: int, thinking: str, *, signature: str = "sig-fake", parts: int = 2
) -> list[dict[str, Any]]:
    deltas = [{"type": "thinking_delta", "thinking": piece} for piece in split_text(thinking, parts)]
    if signature:
        deltas.append({"type": "signature_delta", "signature": signature})
    return _block(index, {"type": "thinking", "thinking": "", "signature": ""}, deltas)


def anthropic_tool_use_block(index: int, call: FakeCall, *, parts: int = 3) -> list[dict[str, Any]]:
    start = {"type": "tool_use", "id": call.id or f"toolu_fake_{index}", "name": call.name, "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": ""}]
    deltas += [
        {"type": "input_json_delta", "partial_json": piece} for piece in split_text(call.raw_arguments, parts)
    ]
    return _block(index, start, deltas)


def anthropic_message_end(stop_reason: str = "end_turn", *, output_tokens: int = 5) -> list[dict[str, Any]]:
    delta = {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}}
    delta["usage"] = {"output_tokens": output_tokens}
    return [delta, {"type": "message_stop"}]


def anthropic_reply(
    text: str = "",
    *,
    parts: int = 3,
    thinking: str = "",
    signature: str = "sig-fake",
    tool_calls: list[FakeCall] | None = None,
    stop_reason: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int = 0,
    cache_write: int = 0,
    ping: bool = True,
) -> list[dict[str, Any]]:
    """A whole message: ``message_start``, a ``ping``, thinking / text / tool_use blocks in that
    order, ``message_delta`` (``tool_use`` when there are calls, else ``end_turn``), ``message_stop``."""
    events = [
        anthropic_message_start(input_tokens=input_tokens, cache_read=cache_read, cache_write=cache_write)
    ]
    if ping:
        events.append({"type": "ping"})
    index = 0
    if thinking:
        events += anthropic_thinking_block(index, thinking, signature=signature, parts=parts)
        index += 1
    if text:
        events += anthropic_text_block(index, text, parts=parts)
        index += 1
    for call in tool_calls or []:
        events += anthropic_tool_use_block(index, call, parts=parts)
        index += 1
    reason = stop_reason or ("tool_use" if tool_calls else "end_turn")
    return events + anthropic_message_end(reason, output_tokens=output_tokens)


def anthropic_error_event(type: str = "overloaded_error", message: str = "Overloaded") -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}}


def anthropic_error_body(message: str, *, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}}
