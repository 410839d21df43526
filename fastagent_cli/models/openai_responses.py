"""The OpenAI Responses API wire client (``openai-responses`` and ``openai-codex-responses``):
streaming ``POST .../responses`` on httpx, events read by their ``type``.

Output items arrive by ``output_index``: ``response.output_item.added`` opens a ``reasoning``,
``message`` or ``function_call`` item; deltas fill it (``response.reasoning_summary_text.delta``
and ``response.reasoning_text.delta`` as thinking, ``response.output_text.delta`` and
``response.refusal.delta`` as text, ``response.function_call_arguments.delta`` as arguments);
``response.output_item.done`` carries the finished item, which is what is kept (a reasoning item
whole, with its encrypted content, as the thinking block's signature). ``response.completed``
(``response.done`` / ``response.incomplete`` on the Codex backend) ends it with the usage and
status; ``response.failed`` and ``error`` events become a :class:`ProviderError`.
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
from fastagent_cli.models.http_client import HttpStreamClient
from fastagent_cli.models.responses_encode import encode_responses_request
from fastagent_cli.models.responses_request import text_signature
from fastagent_cli.models.types import (
    AssistantBlock,
    AssistantMessage,
    ModelInfo,
    ModelRequest,
    StreamDelta,
    TextContent,
    ThinkingContent,
    Usage,
    empty_usage,
)
from fastagent_cli.sse import aiter_sse

__all__ = ["OpenAIResponsesClient", "stream_failure"]

_STATUS: dict[str, StopReason] = {
    "completed": "stop",
    "incomplete": "length",
    "failed": "error",
    "cancelled": "error",
    "in_progress": "stop",
    "queued": "stop",
}
_FINAL_EVENTS = ("response.completed", "response.done", "response.incomplete")
_RETRYABLE_CODES = ("rate_limit", "server_error", "overloaded", "timeout", "unavailable", "internal")
_ITEM_KINDS = {"reasoning", "message", "function_call"}


def stream_failure(provider: str, error: Any, fallback: str) -> ProviderError:
    """A ProviderError for an ``error`` event or a failed response's ``error`` object."""
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]  # {"type": "error", "error": {...}} (some proxies)
    code = str(error.get("code") or error.get("type") or "") if isinstance(error, dict) else ""
    message = error.get("message") if isinstance(error, dict) else None
    text = f"{code}: {message}" if code and message else str(message or code or fallback)
    lowered = code.lower()
    retryable = not code or any(marker in lowered for marker in _RETRYABLE_CODES)
    status = 429 if "rate_limit" in lowered else None
    return ProviderError(one_line(f"{provider}: {text}"), status=status, retryable=retryable)


@dataclass
class _Item:
    kind: str  # reasoning | message | function_call | other
    item: dict[str, Any]
    text: list[str] = field(default_factory=list)
    """Text pieces, raw reasoning text or argument fragments."""
    summary: dict[int, list[str]] = field(default_factory=dict)
    """Reasoning summary parts by ``summary_index``."""
    arguments: str | None = None
    """The complete arguments from ``function_call_arguments.done``."""


def _convert_usage(raw: Any) -> Usage:
    usage = empty_usage()
    if not isinstance(raw, dict):
        return usage
    cached = int((raw.get("input_tokens_details") or {}).get("cached_tokens") or 0)
    usage["input"] = max(0, int(raw.get("input_tokens") or 0) - cached)
    usage["output"] = int(raw.get("output_tokens") or 0)
    usage["cacheRead"] = cached
    total = raw.get("total_tokens")
    usage["totalTokens"] = int(total) if isinstance(total, int) else usage["input"] + usage["output"] + cached
    return usage


class _ResponsesStream:
    """Accumulates Responses events into the final assistant message."""

    def __init__(self, model: ModelInfo) -> None:
        self.model = model
        self.items: dict[int, _Item] = {}
        self.by_id: dict[str, int] = {}
        self.response: dict[str, Any] | None = None
        self.received = False

    @property
    def done(self) -> bool:
        return self.response is not None

    def feed(self, name: str | None, data: str) -> list[StreamDelta]:
        if self.done or not data.strip() or data.strip() == "[DONE]":
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
        kind = str(event.get("type") or name or "")
        if kind == "error":
            raise stream_failure(self.model.provider, event, "stream error")
        if kind == "response.failed":
            response = event.get("response") or {}
            details = (response.get("incomplete_details") or {}).get("reason")
            fallback = f"incomplete: {details}" if details else "the response failed"
            raise stream_failure(self.model.provider, response.get("error"), fallback)
        if kind in _FINAL_EVENTS:
            self.response = event.get("response") if isinstance(event.get("response"), dict) else {}
            return []
        if kind == "response.output_item.added":
            self._add(event)
            return []
        if kind == "response.output_item.done":
            item = event.get("item")
            slot = self._slot(event, add_from=item)
            if slot is not None and isinstance(item, dict):
                slot.item = item
            return []
        return self._delta(kind, event)

    def _add(self, event: dict[str, Any]) -> None:
        raw = event.get("item")
        item: dict[str, Any] = raw if isinstance(raw, dict) else {}
        index = event.get("output_index")
        index = index if isinstance(index, int) else len(self.items)
        kind = str(item.get("type"))
        self.items[index] = _Item(kind if kind in _ITEM_KINDS else "other", item)
        if isinstance(item.get("id"), str):
            self.by_id[item["id"]] = index

    def _slot(self, event: dict[str, Any], add_from: Any = None) -> _Item | None:
        index = event.get("output_index")
        if not isinstance(index, int):
            index = self.by_id.get(str(event.get("item_id")), max(self.items, default=-1))
        if index not in self.items and isinstance(add_from, dict):
            self._add({"item": add_from, "output_index": index})
        return self.items.get(index)

    def _delta(self, kind: str, event: dict[str, Any]) -> list[StreamDelta]:
        delta = event.get("delta")
        if kind == "response.reasoning_summary_text.delta" and isinstance(delta, str):
            slot = self._slot(event, add_from={"type": "reasoning"})
            if slot is None or slot.kind != "reasoning" or not delta:
                return []
            part = int(event.get("summary_index") or 0)
            opening = part not in slot.summary and any("".join(p) for p in slot.summary.values())
            slot.summary.setdefault(part, []).append(delta)
            return [StreamDelta("thinking", "\n\n" + delta if opening else delta)]
        if kind == "response.reasoning_text.delta" and isinstance(delta, str) and delta:
            slot = self._slot(event, add_from={"type": "reasoning"})
            if slot is not None and slot.kind == "reasoning":
                slot.text.append(delta)
                return [StreamDelta("thinking", delta)]
            return []
        if kind in ("response.output_text.delta", "response.refusal.delta") and isinstance(delta, str):
            slot = self._slot(event, add_from={"type": "message"})
            if slot is not None and slot.kind == "message" and delta:
                slot.text.append(delta)
                return [StreamDelta("text", delta)]
            return []
        if kind == "response.function_call_arguments.delta" and isinstance(delta, str):
            slot = self._slot(event)
            if slot is not None and slot.kind == "function_call":
                slot.text.append(delta)
        elif kind == "response.function_call_arguments.done" and isinstance(event.get("arguments"), str):
            slot = self._slot(event)
            if slot is not None and slot.kind == "function_call":
                slot.arguments = event["arguments"]
        return []  # created, in_progress, content_part.*, *.done, unknown events

    def _block(self, index: int, slot: _Item) -> AssistantBlock | None:
        item = slot.item
        if slot.kind == "reasoning":
            parts: list[str] = [
                str(s.get("text") or "") for s in item.get("summary") or [] if isinstance(s, dict)
            ]
            if not parts:
                parts = ["".join(slot.summary[i]) for i in sorted(slot.summary)]
            thinking = "\n\n".join(p for p in parts if p) or "".join(slot.text)
            block: ThinkingContent = {"type": "thinking", "thinking": thinking}
            if item.get("encrypted_content") and item.get("id"):
                block["thinkingSignature"] = json.dumps(item, separators=(",", ":"))
            return block if thinking or "thinkingSignature" in block else None
        if slot.kind == "message":
            content = item.get("content")
            final = [
                str(c.get("text") if c.get("type") == "output_text" else c.get("refusal") or "")
                for c in content or []
                if isinstance(c, dict)
            ]
            text = "".join(final) if content else "".join(slot.text)
            if not text:
                return None
            message: TextContent = {"type": "text", "text": text}
            if isinstance(item.get("id"), str):
                message["textSignature"] = text_signature(item["id"], item.get("phase"))
            return message
        if slot.kind == "function_call":
            done = item.get("arguments") if item.get("status") == "completed" else None
            streamed = "".join(slot.text) if slot.text else None
            first = item.get("arguments") if isinstance(item.get("arguments"), str) else ""
            raw = next(r for r in (done, slot.arguments, streamed, first) if isinstance(r, str))
            call_id = str(item.get("call_id") or new_tool_call_id(index))
            item_id = item.get("id")
            full_id = f"{call_id}|{item_id}" if isinstance(item_id, str) and item_id else call_id
            name = str(item.get("name") or "")
            return {"type": "toolCall", "id": full_id, "name": name, "arguments": parse_arguments(raw)}
        return None

    def finish(self) -> AssistantMessage:
        provider = self.model.provider
        if self.response is None:
            if not self.received:
                raise ProviderError(f"{provider}: the server sent an empty response stream", retryable=True)
            raise incomplete_stream(provider)
        content = [b for i in sorted(self.items) if (b := self._block(i, self.items[i])) is not None]
        status = str(self.response.get("status") or "completed")
        stop = _STATUS.get(status, "stop")
        if stop == "stop" and any(block["type"] == "toolCall" for block in content):
            stop = "toolUse"
        message: AssistantMessage = {
            "role": "assistant",
            "content": content,
            "api": self.model.api,
            "provider": provider,
            "model": self.model.id,
            "usage": calculate_cost(self.model, _convert_usage(self.response.get("usage"))),
            "stopReason": stop,
            "timestamp": now_ms(),
        }
        if stop == "error":
            message["errorMessage"] = f"{provider}: the response ended with status {status}"
        return message


class OpenAIResponsesClient(HttpStreamClient):
    """Streams the Responses API; see :class:`~fastagent_cli.models.types.ModelClient`."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta | AssistantMessage]:
        url, headers, body = encode_responses_request(request)
        state = _ResponsesStream(request.model)
        async with (
            self._post_stream(request.model.provider, url, headers, body, request.model) as response,
            aclosing(aiter_sse(response.aiter_bytes())) as events,
        ):
            async for event in events:
                # After the final event the rest is read and ignored so the connection goes back
                # to the pool instead of being dropped.
                for delta in state.feed(event.event, event.data):
                    response.answer_started()
                    yield delta
        yield state.finish()
