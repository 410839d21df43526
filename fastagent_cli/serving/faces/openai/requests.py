"""Request bodies of ``/v1/chat/completions`` and ``/v1/responses``, read and checked.

Every problem is a :class:`~fastagent_cli.serving.faces.openai.content.RequestError` (400
``invalid_request_error`` naming the field). Sampling parameters (``temperature``, ``top_p``,
``max_tokens``, ``seed``...) are accepted and ignored: the agent runs on its own model settings.
What the agent cannot honour is refused rather than ignored: client-side tools (the agent runs its
own; a client would never be asked to run one), ``n`` other than 1 and audio. ``response_format``
/ ``text.format`` asks for structured output (see :mod:`.structured`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastagent_cli.contract import Json
from fastagent_cli.serving.faces.openai.content import RequestError, Turn, read_content
from fastagent_cli.serving.faces.openai.structured import output_schema

__all__ = ["SESSION_HEADER", "ChatRequest", "ResponsesRequest", "parse_chat", "parse_responses"]

SESSION_HEADER = "X-Fastagent-Session"
"""The explicit session header: it wins over ``metadata.session`` and ``user``."""

MAX_SESSION_CHARS = 256
_SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True, slots=True)
class ChatRequest:
    model: str
    stream: bool
    include_usage: bool
    session: str | None
    """The explicit session (header, ``metadata.session``, ``user``), else ``None``."""
    system: str | None
    """The client's system / developer messages, joined."""
    turns: list[Turn]
    """User and assistant messages in order; the last is the user's new message."""
    schema: dict[str, Json] | None = None
    """The JSON Schema the answer must match (``response_format``), else ``None``."""


@dataclass(frozen=True, slots=True)
class ResponsesRequest:
    model: str
    stream: bool
    session: str | None
    previous_response_id: str | None
    store: bool
    system: str | None
    """``instructions`` plus any system / developer input messages."""
    turns: list[Turn]
    schema: dict[str, Json] | None = None
    """The JSON Schema the answer must match (``text.format``), else ``None``."""


def _model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    if model is None or model == "":
        raise RequestError("you must provide a model parameter", "model")
    if not isinstance(model, str):
        raise RequestError("model must be a string", "model")
    return model


def _bool(body: Mapping[str, Any], key: str, default: bool) -> bool:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise RequestError(f"{key} must be a boolean", key)
    return value


def _session(body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    header = headers.get(SESSION_HEADER)
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise RequestError("metadata must be an object of strings", "metadata")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise RequestError("user must be a string", "user")
    for value, where in (
        (header, f"the {SESSION_HEADER} header"),
        ((metadata or {}).get("session"), "metadata.session"),
        (user, "user"),
    ):
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise RequestError(f"{where} must be a string", "metadata")
        if value in (".", "..") or len(value) > MAX_SESSION_CHARS or not value.isprintable():
            raise RequestError(
                f"{where} is not a usable session id (printable, at most {MAX_SESSION_CHARS} characters)",
                "user" if where == "user" else "metadata",
            )
        return value
    return None


def _refuse_unsupported(body: Mapping[str, Any]) -> None:
    tools = body.get("tools") or body.get("functions")
    if tools:
        raise RequestError(
            "client-side tools are not supported: this agent runs its own tools and never asks the "
            "client to run one (leave out tools/functions)",
            "tools" if body.get("tools") else "functions",
            "unsupported_parameter",
        )
    n = body.get("n")
    if n is not None and n != 1:
        raise RequestError("only n=1 is supported: an agent's turn has one answer", "n", "unsupported_value")
    modalities = body.get("modalities")
    if modalities is not None and modalities != ["text"]:
        raise RequestError("only text output is supported", "modalities", "unsupported_value")


def _message_turns(messages: Any, param: str) -> tuple[str | None, list[Turn]]:
    if not isinstance(messages, list) or not messages:
        raise RequestError(f"{param} must be a non-empty array of messages", param)
    system: list[str] = []
    turns: list[Turn] = []
    for index, message in enumerate(messages):
        where = f"{param}[{index}]"
        if isinstance(message, str) and param == "input":
            turns.append(Turn("user", message))
            continue
        if not isinstance(message, dict):
            raise RequestError(f"{where} must be an object", where)
        kind = message.get("type", "message")
        role = message.get("role")
        if kind != "message" or role in ("tool", "function"):
            raise RequestError(
                f"{where}: {role or kind!r} items are not supported: this agent runs its own tools, "
                "a client never returns tool results",
                where,
            )
        if message.get("tool_calls") or message.get("function_call"):
            raise RequestError(
                f"{where}: assistant tool calls are not supported (the agent runs its own tools)", where
            )
        if role in _SYSTEM_ROLES:
            text = read_content(message.get("content"), f"{where}.content", files=False).text
            if text:
                system.append(text)
            continue
        if role not in ("user", "assistant"):
            raise RequestError(
                f"{where}.role must be one of system, developer, user, assistant", f"{where}.role"
            )
        content = read_content(message.get("content"), f"{where}.content", files=role == "user")
        turns.append(Turn(role, content.text, content.images, content.documents))
    if not turns or turns[-1].role != "user":
        raise RequestError(f"the last of {param} must be a user message: it is what the agent answers", param)
    return ("\n\n".join(system) or None), turns


def parse_chat(body: Mapping[str, Any], headers: Mapping[str, str]) -> ChatRequest:
    model = _model(body)
    _refuse_unsupported(body)
    stream = _bool(body, "stream", False)
    options = body.get("stream_options")
    include_usage = False
    if options is not None:
        if not stream:
            raise RequestError(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"
            )
        if not isinstance(options, dict):
            raise RequestError("stream_options must be an object", "stream_options")
        include_usage = _bool(options, "include_usage", False)
    system, turns = _message_turns(body.get("messages"), "messages")
    session = _session(body, headers)
    return ChatRequest(model, stream, include_usage, session, system, turns, output_schema(body))


def parse_responses(body: Mapping[str, Any], headers: Mapping[str, str]) -> ResponsesRequest:
    model = _model(body)
    _refuse_unsupported(body)
    stream = _bool(body, "stream", False)
    store = _bool(body, "store", True)
    previous = body.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise RequestError("previous_response_id must be a response id", "previous_response_id")
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise RequestError("instructions must be a string", "instructions")
    raw = body.get("input")
    if isinstance(raw, str):
        raw = [{"role": "user", "content": raw}]
    system, turns = _message_turns(raw, "input")
    joined = "\n\n".join(part for part in (instructions, system) if part) or None
    session = _session(body, headers)
    return ResponsesRequest(model, stream, session, previous, store, joined, turns, output_schema(body))
