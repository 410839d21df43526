"""The Agent Handler contract: the one seam every host and engine meets at.

    agent.invoke(scope, prompt) -> AsyncIterator[AgentEvent]

Triggers (HTTP, channels, schedules, the CLI, chat) call an :class:`Agent`; engines implement one.
This module is the vocabulary of that seam and imports nothing but the standard library.

Normative rules (Agent Handler SPEC v0.1 section 6):

* MUST 1: a drained stream ends with exactly one terminal event (``completed`` or ``failed``), last.
* MUST 2: failures arrive as a ``failed`` event; iterating the stream never raises.
* MUST 3: a consumer that stops early (``break``, ``aclose()``, task cancellation) aborts in-flight
  work and sees no terminal.
* MUST 4/5: the terminal set is frozen; consumers ignore unknown events, relays pass them through.
* MUST 6 (portable): a session continues in another process because state lives in the store.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

__all__ = [
    "ABORTED_CODE",
    "INVALID_OUTPUT_CODE",
    "SESSION_BUSY_CODE",
    "Agent",
    "AgentEvent",
    "AgentFailure",
    "ApprovalRequested",
    "CollectResult",
    "Completed",
    "DocumentRef",
    "Failed",
    "ImageRef",
    "IncompleteStreamError",
    "Prompt",
    "Retrying",
    "Scope",
    "Text",
    "Thinking",
    "ToolEnded",
    "ToolStarted",
    "UnknownEvent",
    "as_prompt",
    "as_scope",
    "closing",
    "collect",
    "event_from_json",
    "event_from_wire",
    "event_to_json",
    "event_to_wire",
    "escape_lone_surrogates",
    "is_terminal",
    "json_text",
]

Json: TypeAlias = Any
"""Any JSON-serialisable value."""

SESSION_BUSY_CODE = "session_busy"
"""``failed.code`` when another turn already holds the session's lease (retryable)."""

ABORTED_CODE = "aborted"
"""``failed.code`` when a run was deliberately aborted (not retryable)."""

INVALID_OUTPUT_CODE = "invalid_output"
"""``failed.code`` when a structured run got no answer matching its schema (not retryable)."""


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An image attached to a prompt: base64 ``data`` and its MIME type."""

    mime_type: str
    data: str

    def to_json(self) -> dict[str, str]:
        return {"mimeType": self.mime_type, "data": self.data}


@dataclass(frozen=True, slots=True)
class DocumentRef:
    """A document attached to a prompt (a PDF): base64 ``data``, its MIME type and its file name.

    Sent as a document where the model takes one (Anthropic, OpenAI), as its text otherwise."""

    mime_type: str
    data: str
    name: str

    def to_json(self) -> dict[str, str]:
        return {"mimeType": self.mime_type, "data": self.data, "name": self.name}


@dataclass(frozen=True, slots=True)
class Scope:
    """Who the turn belongs to. ``session`` is the caller's opaque id, reused by every turn.

    ``parent_session`` and ``branch_hints`` are read only when the session is first created.
    """

    session: str
    parent_session: str | None = None
    branch_hints: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Prompt:
    """What the caller says: text plus optional images, and optionally the JSON Schema the answer
    must match (``output_schema``: the run's answer is then the validated object, in
    ``completed.data["output"]``; on the wire ``schema``). Only a run's opening prompt's schema
    counts."""

    text: str
    images: tuple[ImageRef, ...] = ()
    output_schema: Mapping[str, Json] | None = field(default=None, compare=False)
    documents: tuple[DocumentRef, ...] = ()
    """PDFs (``invoke --attach``, chat's ``/attach``; on HTTP the body's ``documents``, a fastagent
    extension: the Agent Handler wire of the original carries images only)."""


# --- events -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Text:
    """A piece of the answer."""

    delta: str
    type: Literal["text"] = field(default="text", init=False)


@dataclass(frozen=True, slots=True)
class Thinking:
    """A piece of the model's reasoning: process, never part of the answer."""

    delta: str
    type: Literal["thinking"] = field(default="thinking", init=False)


@dataclass(frozen=True, slots=True)
class ToolStarted:
    id: str
    name: str
    args: Json
    type: Literal["tool_started"] = field(default="tool_started", init=False)


@dataclass(frozen=True, slots=True)
class ToolEnded:
    id: str
    is_error: bool
    content: Json
    type: Literal["tool_ended"] = field(default="tool_ended", init=False)


@dataclass(frozen=True, slots=True)
class Retrying:
    """Advisory: a transient model failure is being retried after ``delay_ms``."""

    attempt: int
    max_attempts: int
    delay_ms: int
    reason: str
    type: Literal["retrying"] = field(default="retrying", init=False)


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    """Advisory: tool call ``tool_call_id`` waits for a person's answer (approval ``id``) until
    ``expires_at`` (epoch ms, ``None``: no expiry); its outcome arrives as its ``tool_ended``."""

    id: str
    tool_call_id: str
    tool: str
    args: Json
    expires_at: int | None = None
    answerers: tuple[str, ...] = ()
    """Platform user ids allowed to answer besides the person who asked (``[approval] allow_from``)."""
    type: Literal["approval_requested"] = field(default="approval_requested", init=False)


@dataclass(frozen=True, slots=True)
class Completed:
    """Terminal: the turn finished. ``data`` never repeats the answer text."""

    data: Json = None
    type: Literal["completed"] = field(default="completed", init=False)


@dataclass(frozen=True, slots=True)
class Failed:
    """Terminal: the turn failed. ``retryable`` says whether the same call may succeed later."""

    details: str
    retryable: bool
    code: str | None = None
    type: Literal["failed"] = field(default="failed", init=False)


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event type this version does not know (MUST 4/5: ignore it, relay it unchanged)."""

    type: str
    raw: Mapping[str, Json]


AgentEvent: TypeAlias = (
    Text
    | Thinking
    | ToolStarted
    | ToolEnded
    | Retrying
    | ApprovalRequested
    | Completed
    | Failed
    | UnknownEvent
)


def is_terminal(event: AgentEvent) -> bool:
    return isinstance(event, Completed | Failed)


@runtime_checkable
class Agent(Protocol):
    """Anything that turns a prompt in a scope into a stream of events."""

    def invoke(self, scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]: ...


# --- JSON wire form ---------------------------------------------------------------------------


def event_to_json(event: AgentEvent) -> dict[str, Json]:
    """The exact wire object of an event (keys as in the spec: ``isError``, ``maxAttempts``...)."""
    if isinstance(event, Text | Thinking):
        return {"type": event.type, "delta": event.delta}
    if isinstance(event, ToolStarted):
        return {"type": event.type, "id": event.id, "name": event.name, "args": event.args}
    if isinstance(event, ToolEnded):
        return {"type": event.type, "id": event.id, "isError": event.is_error, "content": event.content}
    if isinstance(event, Retrying):
        return {
            "type": event.type,
            "attempt": event.attempt,
            "maxAttempts": event.max_attempts,
            "delayMs": event.delay_ms,
            "reason": event.reason,
        }
    if isinstance(event, ApprovalRequested):
        return {
            "type": event.type,
            "id": event.id,
            "toolCallId": event.tool_call_id,
            "tool": event.tool,
            "args": event.args,
            "expiresAt": event.expires_at,
            "answerers": list(event.answerers),
        }
    if isinstance(event, Completed):
        return {"type": "completed"} if event.data is None else {"type": "completed", "data": event.data}
    if isinstance(event, Failed):
        out: dict[str, Json] = {"type": "failed", "details": event.details, "retryable": event.retryable}
        if event.code is not None:
            out["code"] = event.code
        return out
    return dict(event.raw)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_lone_surrogates(text: str) -> str:
    """Lone surrogates (``"\\ud800"``: valid in a JSON string, unencodable in UTF-8) written as
    JSON's ``\\udXXX`` escapes; in JSON text they can only stand inside strings, so the result
    is the same JSON value."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_text(obj: Json) -> str:
    """Compact one-line JSON, non-ASCII kept, that always encodes as UTF-8 (see
    :func:`escape_lone_surrogates`): session lines, SSE ``data:``, model request bodies."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return escape_lone_surrogates(text) if _LONE_SURROGATE.search(text) else text


_encode_string = json.encoder.encode_basestring
"""The string encoder ``json.dumps(..., ensure_ascii=False)`` itself uses (C-accelerated)."""


def event_to_wire(event: AgentEvent) -> str:
    """One compact JSON line (no newline), as written to SSE ``data:`` lines and ``--json``.

    Text and thinking deltas, nearly every event of a stream, are written directly: the same
    characters :func:`json_text` would produce for ``{"type": ..., "delta": ...}``, at a
    fraction of the cost."""
    kind = type(event)
    if kind is Text or kind is Thinking:
        delta = event.delta  # type: ignore[union-attr]
        text = f'{{"type":"{event.type}","delta":{_encode_string(delta)}}}'
        return escape_lone_surrogates(text) if _LONE_SURROGATE.search(text) else text
    return json_text(event_to_json(event))


def event_from_json(obj: Mapping[str, Json]) -> AgentEvent:
    """Parse a wire object. Unknown types become :class:`UnknownEvent`; malformed known ones raise
    ``ValueError``."""
    kind = obj.get("type")
    try:
        if kind == "text":
            return Text(_str(obj["delta"]))
        if kind == "thinking":
            return Thinking(_str(obj["delta"]))
        if kind == "tool_started":
            return ToolStarted(_str(obj["id"]), _str(obj["name"]), obj.get("args"))
        if kind == "tool_ended":
            return ToolEnded(_str(obj["id"]), _bool(obj["isError"]), obj.get("content"))
        if kind == "retrying":
            return Retrying(
                _int(obj["attempt"]), _int(obj["maxAttempts"]), _int(obj["delayMs"]), _str(obj["reason"])
            )
        if kind == "approval_requested":
            expires = obj.get("expiresAt")
            return ApprovalRequested(
                _str(obj["id"]),
                _str(obj["toolCallId"]),
                _str(obj["tool"]),
                obj.get("args"),
                None if expires is None else _int(expires),
                tuple(_str(a) for a in obj.get("answerers") or ()),
            )
        if kind == "completed":
            return Completed(obj.get("data"))
        if kind == "failed":
            code = obj.get("code")
            return Failed(_str(obj["details"]), _bool(obj["retryable"]), None if code is None else _str(code))
    except KeyError as exc:
        raise ValueError(f"{kind} event is missing {exc.args[0]!r}") from None
    if not isinstance(kind, str):
        raise ValueError("event has no string 'type'")
    return UnknownEvent(kind, dict(obj))


def event_from_wire(line: str) -> AgentEvent:
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("event is not a JSON object")
    return event_from_json(obj)


def _str(value: Json) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


def _bool(value: Json) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected a boolean, got {type(value).__name__}")
    return value


def _int(value: Json) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    return int(value)


# --- collect ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CollectResult:
    text: str
    data: Json = None


class AgentFailure(Exception):
    """Raised by :func:`collect` when the stream ends with ``failed``."""

    def __init__(self, details: str, retryable: bool, code: str | None = None) -> None:
        super().__init__(details)
        self.details = details
        self.retryable = retryable
        self.code = code


class IncompleteStreamError(RuntimeError):
    """Raised by :func:`collect` when a stream ends without a terminal event."""


async def collect(events: AsyncIterable[AgentEvent]) -> CollectResult:
    """Buffer the answer text until ``completed``; raise :class:`AgentFailure` on ``failed``.

    Thinking is never folded into the text. Unknown events are ignored.
    """
    parts: list[str] = []
    try:
        async for event in events:
            if isinstance(event, Text):
                parts.append(event.delta)
            elif isinstance(event, Completed):
                return CollectResult("".join(parts), event.data)
            elif isinstance(event, Failed):
                raise AgentFailure(event.details, event.retryable, event.code)
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    raise IncompleteStreamError("stream ended without a terminal event")


@asynccontextmanager
async def closing(events: AsyncIterator[AgentEvent]) -> AsyncIterator[AsyncIterator[AgentEvent]]:
    """Like :func:`contextlib.aclosing` for any event iterator: on exit (normal, ``break``,
    exception or cancellation) the stream is closed, which aborts the agent's in-flight work."""
    try:
        yield events
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def as_scope(scope: Scope | str) -> Scope:
    return Scope(scope) if isinstance(scope, str) else scope


def as_prompt(prompt: Prompt | str, images: Sequence[ImageRef] = ()) -> Prompt:
    return Prompt(prompt, tuple(images)) if isinstance(prompt, str) else prompt
