"""The ``anthropic-messages`` wire client: streaming ``POST {base_url}/v1/messages`` on httpx.

Content blocks arrive by index (``content_block_start`` / ``_delta`` / ``_stop``): text, thinking
(with a signature to replay later) and tool_use (input JSON streamed in fragments). Usage comes in
``message_start`` and ``message_delta``; an ``error`` event mid-stream becomes a ProviderError.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from fastagent_cli.errors import ProviderError, one_line
from fastagent_cli.models._wire import (
    StopReason,
    calculate_cost,
    incomplete_stream,
    new_tool_call_id,
    now_ms,
    parse_arguments,
)
from fastagent_cli.models.anthropic_encode import encode_messages_request
from fastagent_cli.models.anthropic_request import build_messages_request, uses_claude_code
from fastagent_cli.models.claude_code import from_claude_code_name
from fastagent_cli.models.http_client import HttpStreamClient
from fastagent_cli.models.types import (
    AssistantBlock,
    AssistantMessage,
    ModelInfo,
    ModelRequest,
    StreamDelta,
    ThinkingContent,
    empty_usage,
)
from fastagent_cli.sse import aiter_sse

__all__ = ["API", "AnthropicMessagesClient", "build_messages_request", "stream_error"]

API = "anthropic-messages"
_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "pause_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "refusal": "error",
    "sensitive": "error",
    "model_context_window_exceeded": "error",
}
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_RETRYABLE_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
_IMPLIED_KIND = {  # a delta for a block whose start never arrived
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
    "input_json_delta": "toolCall",
}
_USAGE_KEYS = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_input_tokens": "cacheRead",
    "cache_creation_input_tokens": "cacheWrite",
}


def stream_error(provider: str, error: Any) -> ProviderError:
    """The ProviderError for an ``error`` event (``{"type": "overloaded_error", "message": ...}``)."""
    kind = str(error.get("type") or "error") if isinstance(error, dict) else "error"
    message = error.get("message") if isinstance(error, dict) else error
    text = one_line(f"{provider}: {kind}: {message}" if message else f"{provider}: {kind}")
    retryable = kind in _RETRYABLE_TYPES or kind not in _ERROR_STATUS
    return ProviderError(text, status=_ERROR_STATUS.get(kind), retryable=retryable)


@dataclass
class _Block:
    kind: str  # text | thinking | toolCall | other (redacted thinking, server tools, ...)
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    id: str = ""
    name: str = ""
    initial_input: Any = None


class _MessageStream:
    """Accumulates Messages API events into the final assistant message."""

    def __init__(self, model: ModelInfo, tool_names: tuple[str, ...] | None = None) -> None:
        self.model = model
        self.tool_names = tool_names
        """Set for a Claude Code (subscription) request: names to map tool calls back to."""
        self.blocks: dict[int, _Block] = {}
        self.counts = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        self.stop_reason: str | None = None
        self.stopped = False
        self.received = False

    def feed(self, name: str | None, data: str) -> list[StreamDelta]:
        if self.stopped or not data.strip():
            return []
        try:
            event = json.loads(data)
        except ValueError:
            text = one_line(data)[:200]
            raise ProviderError(
                f"{self.model.provider}: malformed stream data: {text}", retryable=True
            ) from None
        if not isinstance(event, dict):
            return []
        self.received = True
        kind = event.get("type") or name
        if kind == "error":
            raise stream_error(self.model.provider, event.get("error"))
        if kind == "message_start":
            self._usage((event.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            return self._start(int(event.get("index", 0)), event.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(int(event.get("index", 0)), event.get("delta") or {})
        elif kind == "message_delta":
            reason = (event.get("delta") or {}).get("stop_reason")
            if isinstance(reason, str):
                self.stop_reason = reason
            self._usage(event.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        return []  # ping, content_block_stop, unknown events

    def _usage(self, raw: Any) -> None:
        if isinstance(raw, dict):
            for key, target in _USAGE_KEYS.items():
                if isinstance(raw.get(key), int):
                    self.counts[target] = raw[key]

    def _start(self, index: int, raw: dict[str, Any]) -> list[StreamDelta]:
        kind = raw.get("type")
        if kind == "text":
            self.blocks[index] = _Block("text")
            return self._delta(index, {"type": "text_delta", "text": raw.get("text") or ""})
        if kind == "thinking":
            self.blocks[index] = _Block("thinking", signature=raw.get("signature") or "")
            return self._delta(index, {"type": "thinking_delta", "thinking": raw.get("thinking") or ""})
        if kind == "tool_use":
            name = str(raw.get("name") or "")
            if self.tool_names is not None:
                name = from_claude_code_name(name, self.tool_names)
            block = _Block("toolCall", id=raw.get("id") or "", name=name)
            block.initial_input = raw.get("input")
            self.blocks[index] = block
        else:
            self.blocks[index] = _Block("other")
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamDelta]:
        kind = delta.get("type")
        block = self.blocks.setdefault(index, _Block(_IMPLIED_KIND.get(str(kind), "other")))
        if kind == "text_delta" and block.kind == "text" and delta.get("text"):
            block.parts.append(delta["text"])
            return [StreamDelta("text", delta["text"])]
        if kind == "thinking_delta" and block.kind == "thinking" and delta.get("thinking"):
            block.parts.append(delta["thinking"])
            return [StreamDelta("thinking", delta["thinking"])]
        if kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block.signature += delta["signature"]
        elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block.parts.append(delta["partial_json"])
        return []

    def _content(self) -> list[AssistantBlock]:
        content: list[AssistantBlock] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            text = "".join(block.parts)
            if block.kind == "text" and text:
                content.append({"type": "text", "text": text})
            elif block.kind == "thinking" and (text or block.signature):
                thinking: ThinkingContent = {"type": "thinking", "thinking": text}
                if block.signature:
                    thinking["thinkingSignature"] = block.signature
                content.append(thinking)
            elif block.kind == "toolCall":
                arguments = parse_arguments(text)
                if not text.strip() and isinstance(block.initial_input, dict):
                    arguments = block.initial_input
                call_id = block.id or new_tool_call_id(index)
                content.append(
                    {"type": "toolCall", "id": call_id, "name": block.name, "arguments": arguments}
                )
        return content

    def finish(self) -> AssistantMessage:
        provider = self.model.provider
        if not self.stopped and self.stop_reason is None:
            if not self.received:
                raise ProviderError(f"{provider}: the server sent an empty response stream", retryable=True)
            raise incomplete_stream(provider)
        content = self._content()
        stop = _STOP.get(self.stop_reason or "end_turn", "stop")
        if stop == "stop" and any(block["type"] == "toolCall" for block in content):
            stop = "toolUse"
        usage = empty_usage()
        usage["input"], usage["output"] = self.counts["input"], self.counts["output"]
        usage["cacheRead"], usage["cacheWrite"] = self.counts["cacheRead"], self.counts["cacheWrite"]
        usage["totalTokens"] = sum(self.counts.values())
        message: AssistantMessage = {
            "role": "assistant",
            "content": content,
            "api": API,
            "provider": provider,
            "model": self.model.id,
            "usage": calculate_cost(self.model, usage),
            "stopReason": stop,
            "timestamp": now_ms(),
        }
        if stop == "error":
            message["errorMessage"] = f"{provider}: the model stopped with {self.stop_reason}"
        return message


class AnthropicMessagesClient(HttpStreamClient):
    """Streams the Messages API; see :class:`~fastagent_cli.models.types.ModelClient`."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta | AssistantMessage]:
        url, headers, body = encode_messages_request(request)
        names = tuple(t.name for t in request.tools) if uses_claude_code(request) else None
        state = _MessageStream(request.model, names)
        async with (
            self._post_stream(request.model.provider, url, headers, body, request.model) as response,
            aclosing(aiter_sse(response.aiter_bytes())) as events,
        ):
            async for event in events:
                # After message_stop the rest is read and ignored so the connection goes back to
                # the pool instead of being dropped.
                for delta in state.feed(event.event, event.data):
                    response.answer_started()
                    yield delta
        yield state.finish()
