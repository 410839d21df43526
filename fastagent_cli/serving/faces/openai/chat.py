"""``POST /v1/chat/completions``: a turn as a ``chat.completion`` or a stream of
``chat.completion.chunk`` messages ending ``data: [DONE]``.

Streaming: chunks carry what clients read (``id``, ``object``, ``created``, ``model``,
``choices[{index, delta, finish_reason}]``) and leave out the always-null ``logprobs`` and
``system_fingerprint`` (a chunk per token: its size is most of the face's cost per turn); the
first chunk carries ``delta.role = "assistant"``; answer text is ``delta.content``,
reasoning ``delta.reasoning_content`` (the field llama.cpp, vLLM and DeepSeek stream it in, which
Open WebUI shows as thinking); the last choice chunk has ``finish_reason``; with
``stream_options.include_usage`` every chunk has ``"usage": null`` and one more chunk with empty
``choices`` carries the usage, before ``[DONE]``. The agent's own tool calls are its business:
they never appear as ``tool_calls`` (a client would take them as calls it must run). A turn
that fails after the stream started ends it with ``data: {"error": {...}}`` and no ``[DONE]``
(the SDKs raise it as an ``APIError``).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from fastagent_cli.contract import (
    AgentEvent,
    Completed,
    Failed,
    Text,
    Thinking,
    escape_lone_surrogates,
    json_text,
)
from fastagent_cli.serving.faces.openai.errors import failure_error, failure_response
from fastagent_cli.serving.faces.openai.turn import chat_usage, finish_reason

__all__ = ["ChunkEncoder", "collect_completion", "completion_body", "json_string"]

_encode_string = json.encoder.encode_basestring
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_string(text: str) -> str:
    """``text`` as a JSON string literal (non-ASCII kept), always encodable as UTF-8: the cheap
    path of each streamed delta (what :func:`~fastagent_cli.contract.json_text` would write)."""
    encoded = _encode_string(text)
    return escape_lone_surrogates(encoded) if _LONE_SURROGATE.search(encoded) else encoded


_DONE = "data: [DONE]\n\n"


class ChunkEncoder:
    """AgentEvents -> whole SSE messages (``stream_events(..., framed=True)``)."""

    def __init__(self, model: str, include_usage: bool) -> None:
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = model
        self.include_usage = include_usage
        usage = ',"usage":null' if include_usage else ""
        head = (
            f'{{"id":"{self.id}","object":"chat.completion.chunk","created":{self.created},'
            f'"model":{json_string(model)},"choices":[{{"index":0,"delta":{{'
        )
        self._head = head
        self._tail = f'}},"finish_reason":null}}]{usage}}}\n\n'
        self._started = False

    def _chunk(self, delta: str) -> str:
        if not self._started:
            self._started = True
            delta = f'"role":"assistant",{delta}'
        return f"data: {self._head}{delta}{self._tail}"

    def __call__(self, event: AgentEvent) -> str:
        kind = type(event)
        if kind is Text:
            return self._chunk(f'"content":{json_string(event.delta)}')  # type: ignore[union-attr]
        if kind is Thinking:
            return self._chunk(f'"reasoning_content":{json_string(event.delta)}')  # type: ignore[union-attr]
        if isinstance(event, Completed):
            return self._finish(event)
        if isinstance(event, Failed):
            _status, body = failure_error(event)
            return f"data: {json_text(body)}\n\n"
        return ""  # tool activity, retries, unknown events: the agent's own business

    def _finish(self, event: Completed) -> str:
        opening = "" if self._started else self._chunk('"content":""')
        last: dict[str, Any] = self._base()
        last["choices"] = [{"index": 0, "delta": {}, "finish_reason": finish_reason(event.data)}]
        if self.include_usage:
            last["usage"] = None
        out = f"{opening}data: {json_text(last)}\n\n"
        if self.include_usage:
            usage = self._base()
            usage["choices"] = []
            usage["usage"] = chat_usage(event.data)
            out += f"data: {json_text(usage)}\n\n"
        return out + _DONE

    def _base(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }


def completion_body(model: str, text: str, reasoning: str, data: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if reasoning:
        message["reasoning_content"] = reasoning
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(data)}],
        "usage": chat_usage(data),
    }


async def collect_completion(model: str, events: AsyncIterator[AgentEvent]) -> web.Response:
    """The whole turn as one ``chat.completion`` (or the failed turn's error)."""
    text: list[str] = []
    reasoning: list[str] = []
    try:
        async for event in events:
            if isinstance(event, Text):
                text.append(event.delta)
            elif isinstance(event, Thinking):
                reasoning.append(event.delta)
            elif isinstance(event, Completed):
                body = completion_body(model, "".join(text), "".join(reasoning), event.data)
                return web.Response(text=json_text(body), content_type="application/json")
            elif isinstance(event, Failed):
                return failure_response(event)
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    return failure_response(Failed("the agent's stream ended without a result", False, "internal_error"))
