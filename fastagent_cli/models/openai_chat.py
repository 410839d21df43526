"""The ``openai-completions`` wire client: streaming ``POST {base_url}/chat/completions`` on httpx.

Works with OpenAI and the OpenAI-compatible servers (llama.cpp, llama-cpp-python, vLLM, OpenRouter,
Groq, ...): tool calls are assembled by index, reasoning arrives as ``reasoning_content`` or
``reasoning``, usage may come in a chunk without choices or not at all.
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
from fastagent_cli.models.context_budget import OVERFLOW_ADVICE, estimate_input_tokens
from fastagent_cli.models.http_client import HttpStreamClient
from fastagent_cli.models.http_errors import classify_status
from fastagent_cli.models.openai_request import build_chat_request, encode_chat_request
from fastagent_cli.models.token_counts import conversation_counts
from fastagent_cli.models.types import (
    AssistantBlock,
    AssistantMessage,
    ModelRequest,
    StreamDelta,
    Usage,
    empty_usage,
)
from fastagent_cli.sse import aiter_sse

__all__ = ["API", "OpenAIChatClient", "build_chat_request"]

API = "openai-completions"
_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "error",
}
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")


@dataclass
class _PartialCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _convert_usage(raw: dict[str, Any]) -> Usage:
    prompt = int(raw.get("prompt_tokens") or 0)
    completion = int(raw.get("completion_tokens") or 0)
    cached = int((raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    cached = cached or int(raw.get("prompt_cache_hit_tokens") or 0)
    reasoning = int((raw.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
    # OpenAI counts reasoning inside completion_tokens; add it only when reported on top of them.
    separate = reasoning > 0 and raw.get("total_tokens") == prompt + completion + reasoning
    usage = empty_usage()
    usage["input"] = max(0, prompt - cached)
    usage["output"] = completion + reasoning if separate else completion
    usage["cacheRead"] = cached
    usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"]
    return usage


class _ChatStream:
    """Accumulates chunks of choice 0 into the final assistant message."""

    def __init__(self, request: ModelRequest) -> None:
        self.request = request
        self.model = request.model
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.done = False
        self.received = False

    def feed_data(self, data: str) -> list[StreamDelta]:
        data = data.strip()
        if not data or self.done:
            return []
        if data == "[DONE]":
            self.done = True
            return []
        try:
            chunk = json.loads(data)
        except ValueError:
            text = one_line(data)[:200]
            raise ProviderError(
                f"{self.model.provider}: malformed stream data: {text}", retryable=True
            ) from None
        return self.feed_chunk(chunk) if isinstance(chunk, dict) else []

    def feed_body(self, raw: bytes) -> list[StreamDelta]:
        """A complete (non-streamed) JSON completion, from a server that ignored ``stream``."""
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict) or not ("choices" in body or "error" in body):
            text = one_line(raw.decode("utf-8", "replace"))[:200]
            raise ProviderError(f"{self.model.provider}: unexpected response: {text}", retryable=True)
        deltas = self.feed_chunk(body)
        self.done = True
        return deltas

    def feed_chunk(self, chunk: dict[str, Any]) -> list[StreamDelta]:
        self.received = True
        if chunk.get("error"):
            raise _error_in_body(self.model.provider, chunk["error"])
        if isinstance(chunk.get("usage"), dict):
            self.usage = _convert_usage(chunk["usage"])
        out: list[StreamDelta] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            reasoning = ""
            if len(delta) > 1 or "content" not in delta:  # a content-only delta has none
                for key in _REASONING_FIELDS:
                    if isinstance(delta.get(key), str):
                        reasoning = delta[key]
                        break
            if reasoning:
                self.thinking.append(reasoning)
                out.append(StreamDelta("thinking", reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                out.append(StreamDelta("text", content))
            for position, raw in enumerate(delta.get("tool_calls") or []):
                if isinstance(raw, dict):
                    self._feed_tool_call(raw, position)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = choice["finish_reason"]
        return out

    def _feed_tool_call(self, raw: dict[str, Any], position: int) -> None:
        index, call_id = raw.get("index"), raw.get("id")
        if not isinstance(index, int):  # servers that omit the index: match by id, else append
            known = [i for i, c in self.calls.items() if call_id and c.id == call_id]
            index = known[0] if known else (len(self.calls) if call_id or not self.calls else position)
        call = self.calls.setdefault(index, _PartialCall())
        if isinstance(call_id, str) and call_id and not call.id:
            call.id = call_id
        function = raw.get("function") or {}
        name, arguments = function.get("name"), function.get("arguments")
        if isinstance(name, str) and name and not call.name:
            call.name = name  # llama-cpp-python repeats the name on every chunk
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif isinstance(arguments, dict):
            call.arguments.append(json.dumps(arguments))

    def finish(self) -> AssistantMessage:
        provider = self.model.provider
        if not self.done and self.finish_reason is None:
            if not self.received:
                raise empty_stream_error(self.request)
            raise incomplete_stream(provider)
        content: list[AssistantBlock] = []
        if self.thinking:
            content.append({"type": "thinking", "thinking": "".join(self.thinking)})
        if self.text:
            content.append({"type": "text", "text": "".join(self.text)})
        for index in sorted(self.calls):
            call = self.calls[index]
            content.append(
                {
                    "type": "toolCall",
                    "id": call.id or new_tool_call_id(index),
                    "name": call.name,
                    "arguments": parse_arguments("".join(call.arguments)),
                }
            )
        stop: StopReason = "toolUse" if self.calls else _FINISH.get(self.finish_reason or "stop", "stop")
        message: AssistantMessage = {
            "role": "assistant",
            "content": content,
            "api": API,
            "provider": provider,
            "model": self.model.id,
            "usage": calculate_cost(self.model, self.usage or empty_usage()),
            "stopReason": stop,
            "timestamp": now_ms(),
        }
        if stop == "error":
            message["errorMessage"] = f"{provider}: the response was stopped by the content filter"
        return message


def empty_stream_error(request: ModelRequest) -> ProviderError:
    """A 200 with no data. llama-cpp-python answers a request that overflows the context window
    this way (the reason is only in its log), so when the request fills half the window or more
    the error says that is the likely cause, and is not retried: the same request fails again."""
    model = request.model
    counts = conversation_counts(request.memo)
    used, _ = estimate_input_tokens(
        request.system, request.messages, request.tools, request.server_ratio, counts
    )
    text = f"{model.provider}: the server sent an empty response stream"
    if used * 2 < model.context_window:
        return ProviderError(
            f"{text} (if the server's context window is smaller than the {model.context_window:,} "
            f"tokens {model.spec} declares, this request of about {used:,} tokens may have overflowed "
            "it: declare its contextWindow in models.json)",
            retryable=True,
        )
    return ProviderError(
        f"{text}, likely a context overflow: the request is about {used:,} tokens and {model.spec} "
        f"declares a {model.context_window:,}-token context window (declare the server's real "
        f"contextWindow in models.json if it is smaller); {OVERFLOW_ADVICE}",
        retryable=False,
    )


def _error_in_body(provider: str, error: Any) -> ProviderError:
    """An ``{"error": ...}`` object sent inside a 200 stream (OpenRouter, some proxies)."""
    message = error.get("message") if isinstance(error, dict) else error
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) else None
    retryable = classify_status(status) if status else True
    return ProviderError(
        f"{provider}: stream error: {one_line(str(message))}", status=status, retryable=retryable
    )


# ----------------------------------------------------------------------------- client


class OpenAIChatClient(HttpStreamClient):
    """Streams chat completions; see :class:`~fastagent_cli.models.types.ModelClient`."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta | AssistantMessage]:
        url, headers, body = encode_chat_request(request)
        state = _ChatStream(request)
        async with self._post_stream(request.model.provider, url, headers, body, request.model) as response:
            content_type = response.headers.get("content-type", "")
            if content_type.startswith("application/json"):  # the server ignored ``stream``
                for delta in state.feed_body(await response.aread()):
                    yield delta
            else:
                async with aclosing(aiter_sse(response.aiter_bytes())) as events:
                    async for event in events:
                        # After [DONE] the rest is read and ignored (as the SDKs do) so the
                        # connection goes back to the pool instead of being dropped.
                        for delta in state.feed_data(event.data):
                            response.answer_started()
                            yield delta
        yield state.finish()
