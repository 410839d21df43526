"""The request side of ``openai-completions``: pi messages, tools and thinking level to a
streaming chat-completions body (system/developer role, tool results as ``role: "tool"``, compat
flags from ``models.json``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from fastagent_cli.contract import json_text
from fastagent_cli.errors import ProviderError
from fastagent_cli.messages import is_failed_turn
from fastagent_cli.models._wire import (
    NO_RESULT_TEXT,
    continues,
    default_max_tokens,
    document_note,
    is_same_model,
    pdf_data_url,
    spliced_body,
    wire_arguments,
)
from fastagent_cli.models.copilot import copilot_headers
from fastagent_cli.models.structured import native_mode
from fastagent_cli.models.types import ContentBlock, Message, ModelRequest, ToolResultMessage, UserBlock

__all__ = ["OPENAI_BASE_URL", "build_chat_request", "encode_chat_request", "tool_result_text"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_IMAGE_NOTE = "(image omitted: this model does not accept images)"
_PREFIX_SLOT = ("openai-completions", "prefix")


def _user_content(
    content: list[UserBlock] | str, images: bool, pdf: bool = False
) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    has_part = False
    for block in content:
        if block["type"] == "text":
            texts.append(block["text"])
            parts.append({"type": "text", "text": block["text"]})
        elif block["type"] == "document":
            if pdf:
                has_part = True
                file = {"filename": block["name"], "file_data": pdf_data_url(block)}
                parts.append({"type": "file", "file": file})
            else:
                texts.append(document_note(block))
                parts.append({"type": "text", "text": texts[-1]})
        elif images:
            has_part = True
            url = f"data:{block['mimeType']};base64,{block['data']}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            texts.append(_IMAGE_NOTE)
    # Plain strings for text-only turns: some local servers' chat templates cannot render parts.
    return parts if has_part else "\n".join(texts)


def tool_result_text(content: list[ContentBlock]) -> str:
    """A tool result as the model reads it: its text blocks joined by newlines (an image noted)."""
    return "\n".join(
        b["text"] if b["type"] == "text" else f"(image {b['mimeType']} omitted from the tool result)"
        for b in content
    )


def _tool_result(call_id: str, name: str, text: str, with_name: bool) -> dict[str, Any]:
    result = {"role": "tool", "tool_call_id": call_id, "content": text}
    if with_name:
        result["name"] = name
    return result


@dataclass(frozen=True, slots=True)
class _Prefix:
    """The encoded messages of the last request of a conversation, and where the conversion
    stood after them: the next request that only appends to them goes on from there."""

    key: tuple[Any, ...]
    messages: list[Message]
    text: str
    """Their wire forms' JSON texts, joined by commas."""
    pending: dict[str, str]
    previous: str


class _Conversion:
    """pi's message transform (:func:`~fastagent_cli.models._wire.transform_messages`) and the
    chat-completions shapes in one pass over the conversation. With ``encode``, each message is
    the JSON text of its wire form, taken from the request's ``memo`` when this message object
    was converted for this model before, and the encoded history of the conversation's last
    request is kept there too (:meth:`encoded_history`): a request that only appends to it
    converts and encodes the new messages alone, whatever the length of the conversation."""

    def __init__(self, request: ModelRequest, encode: bool) -> None:
        model, compat = request.model, request.model.compat
        self.model = model
        self.openai = model.provider == "openai"
        self.with_name = bool(compat.get("requiresToolResultName"))
        self.filler = bool(compat.get("requiresAssistantAfterToolResult"))
        self.key = (
            model.provider,
            model.api,
            model.id,
            model.supports_images,
            model.supports_pdf,
            self.with_name,
        )
        self.prefix_key = (*self.key, self.filler)
        self.encode = encode
        self.memo = request.memo
        self.out: list[Any] = []
        self.pending: dict[str, str] = {}
        self.previous = ""

    def normalize(self, value: str) -> str:
        return value[:40] if self.openai else value

    def add(self, wire: dict[str, Any]) -> None:
        self.out.append(json_text(wire) if self.encode else wire)

    def cached(self, message: Message) -> tuple[Any, tuple[tuple[str, str], ...]]:
        """(wire form or None, tool calls (id, name)) of ``message``, converted once per model."""
        if not self.encode:
            return self.convert(message)
        memo = self.memo
        slot = ("openai-completions", id(message))
        kept = memo.get(slot) if memo is not None else None
        # The message object itself is kept and compared: an id alone could be a new object's.
        if kept is not None and kept[0] is message and kept[1] == self.key:
            return kept[2]  # type: ignore[no-any-return]
        wire, calls = self.convert(message)
        encoded = (None if wire is None else json_text(wire), calls)
        if memo is not None:
            memo[slot] = (message, self.key, encoded)
        return encoded

    def convert(self, message: Message) -> tuple[dict[str, Any] | None, tuple[tuple[str, str], ...]]:
        if message["role"] == "user":
            content = _user_content(message["content"], self.model.supports_images, self.model.supports_pdf)
            return {"role": "user", "content": content}, ()
        if message["role"] == "toolResult":
            call_id = self.normalize(message["toolCallId"])
            text = tool_result_text(message["content"])
            return _tool_result(call_id, message["toolName"], text, self.with_name), ()
        same = is_same_model(message, self.model)
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for block in message["content"]:
            if block["type"] == "text":
                if block["text"]:
                    texts.append(block["text"])
            elif block["type"] == "thinking":
                if not same and block["thinking"].strip():  # another model's thinking: text
                    texts.append(block["thinking"])
            elif block["type"] == "toolCall":
                function = {"name": block["name"], "arguments": wire_arguments(block["arguments"])}
                calls.append({"id": self.normalize(block["id"]), "type": "function", "function": function})
        if not texts and not calls:
            return None, ()
        # content must be a string: llama-cpp-python answers 500 to ``content: null``.
        wire: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts)}
        if calls:
            wire["tool_calls"] = calls
        return wire, tuple((c["id"], c["function"]["name"]) for c in calls)

    def flush_pending(self) -> None:
        """Every tool call still unanswered gets an error result before the conversation goes on."""
        for call_id, name in self.pending.items():
            self.add(_tool_result(call_id, name, NO_RESULT_TEXT, self.with_name))
            self.previous = "toolResult"
        self.pending.clear()

    def encoded_history(self, messages: Sequence[Message]) -> str:
        """The JSON texts of the messages' wire forms, joined by commas: the last request's
        (in the memo) reused when ``messages`` starts with its messages, for the same model and
        compat (the same objects, or equal ones: the wire form is a function of the message)."""
        memo = self.memo
        kept = memo.get(_PREFIX_SLOT) if memo is not None else None
        text, start = "", 0
        if isinstance(kept, _Prefix) and kept.key == self.prefix_key and continues(messages, kept.messages):
            text, start = kept.text, len(kept.messages)
            self.pending, self.previous = dict(kept.pending), kept.previous
        added = ",".join(self.run(messages[start:]))
        text = f"{text},{added}" if text and added else text or added
        if memo is not None:
            memo[_PREFIX_SLOT] = _Prefix(
                self.prefix_key, list(messages), text, dict(self.pending), self.previous
            )
        return text

    def run(self, messages: Sequence[Message]) -> list[Any]:
        for message in messages:
            role = message["role"]
            if role == "assistant":
                if is_failed_turn(message):
                    continue  # a failed turn is not sent back
                self.flush_pending()
                wire, calls = self.cached(message)
                self.pending.update(calls)
                if wire is None:
                    continue
            elif role == "toolResult":
                self.pending.pop(self.normalize(cast(ToolResultMessage, message)["toolCallId"]), None)
                wire, _ = self.cached(message)
            else:
                self.flush_pending()
                if self.previous == "toolResult" and self.filler:
                    self.add({"role": "assistant", "content": "I have processed the tool results."})
                wire, _ = self.cached(message)
            self.out.append(wire)
            self.previous = role
        return self.out


def _system_message(request: ModelRequest) -> dict[str, Any] | None:
    model = request.model
    if not request.system:
        return None
    developer = model.reasoning and model.compat.get("supportsDeveloperRole", model.provider == "openai")
    return {"role": "developer" if developer else "system", "content": request.system}


def _convert_messages(request: ModelRequest) -> list[Any]:
    conversion = _Conversion(request, encode=False)
    system = _system_message(request)
    if system is not None:
        conversion.add(system)
    return conversion.run(request.messages)


def _encoded_messages(request: ModelRequest) -> str:
    """:func:`_convert_messages` as JSON texts joined by commas (the history's from the memo)."""
    history = _Conversion(request, encode=True).encoded_history(request.messages)
    system = _system_message(request)
    if system is None:
        return history
    head = json_text(system)
    return f"{head},{history}" if history else head


def build_chat_request(request: ModelRequest) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The URL, headers and JSON body of a streaming chat-completions request."""
    url, headers = _target(request)
    body: dict[str, Any] = {"model": request.model.id, "messages": _convert_messages(request), "stream": True}
    _fill_body(body, request)
    return url, headers, body


def encode_chat_request(request: ModelRequest) -> tuple[str, dict[str, str], bytes]:
    """:func:`build_chat_request` with the body already encoded (the same JSON text, key for
    key), each message's text reused from earlier requests of the conversation (``request.memo``),
    and the history of the last one as a whole when this request only appends to it."""
    url, headers = _target(request)
    body: dict[str, Any] = {"model": request.model.id, "messages": [], "stream": True}
    _fill_body(body, request)
    return url, headers, spliced_body(body, "messages", _encoded_messages(request))


def _target(request: ModelRequest) -> tuple[str, dict[str, str]]:
    model = request.model
    base = model.base_url or (OPENAI_BASE_URL if model.provider == "openai" else "")
    if not base:
        raise ProviderError(f"{model.provider}: model {model.spec} has no base URL")
    headers = {"Accept": "text/event-stream"}
    if request.api_key:
        headers["Authorization"] = f"Bearer {request.api_key}"
    headers.update(model.headers)
    headers.update(copilot_headers(request))
    return f"{base.rstrip('/')}/chat/completions", headers


def _fill_body(body: dict[str, Any], request: ModelRequest) -> None:
    """Everything of the body after ``model``, ``messages`` and ``stream``."""
    model, compat = request.model, request.model.compat
    if compat.get("supportsUsageInStreaming", True) is not False:
        body["stream_options"] = {"include_usage": True}
    max_field = compat.get("maxTokensField") or (
        "max_completion_tokens" if model.provider == "openai" else "max_tokens"
    )
    body[max_field] = default_max_tokens(request)
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
            }
            for t in request.tools
        ]
    out = request.output
    if out is not None and native_mode(model.api, compat) == "response_format":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": out.name, "schema": dict(out.schema), "strict": out.strict},
        }
    if model.reasoning:
        thinking_format = compat.get("thinkingFormat")
        enabled = request.thinking != "off"
        if thinking_format in ("zai", "qwen"):
            body["enable_thinking"] = enabled
        elif thinking_format == "qwen-chat-template":
            body["chat_template_kwargs"] = {"enable_thinking": enabled}
        elif enabled and compat.get("supportsReasoningEffort", True) is not False:
            efforts = {**_EFFORT, **dict(compat.get("reasoningEffortMap") or {})}
            body["reasoning_effort"] = efforts.get(request.thinking, request.thinking)
