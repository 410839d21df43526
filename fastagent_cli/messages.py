"""pi's message shapes: the vocabulary the wire clients, the session records and the engine share.

Messages are plain dicts in pi's on-disk form (camelCase keys), so a session line is the message
as the engine holds it, with no conversion on the hot path. This module sits on the contract's
floor (standard library only): ``models/`` and ``sessions/`` both build on it without importing
each other.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

__all__ = [
    "COMPACTION_SUMMARY_PREFIX",
    "THINKING_LEVELS",
    "TOOL_BUDGET_NOTE",
    "AssistantBlock",
    "AssistantMessage",
    "ContentBlock",
    "Cost",
    "DocumentContent",
    "ImageContent",
    "Message",
    "StopReason",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevel",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserBlock",
    "UserMessage",
    "empty_usage",
    "is_failed_turn",
    "message_text",
    "now_ms",
]

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n"
)
"""How the user message a compacted context starts with begins (then ``<summary>...``)."""

TOOL_BUDGET_NOTE = (
    "[fastagent] The tool budget for this turn is exhausted. Tools are no longer available: "
    "answer now with what you have."
)
"""The user note the engine appends when a turn's tool rounds are used up (models that replay a
conversation, like the scripted one, skip it when they look for the latest user text)."""


def is_failed_turn(message: Mapping[str, Any]) -> bool:
    """An assistant message that ended in ``error`` or ``aborted``: recorded (with its partial
    content and ``errorMessage``) but never sent back to a model (pi's transform drops it)."""
    return message.get("role") == "assistant" and message.get("stopReason") in ("error", "aborted")


def now_ms() -> int:
    """A message timestamp: milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


class TextContent(TypedDict):
    type: Literal["text"]
    text: str
    textSignature: NotRequired[str]
    """The Responses API message item this text came from (pi's ``{"v":1,"id":...}``)."""


class ImageContent(TypedDict):
    type: Literal["image"]
    data: str
    mimeType: str


class DocumentContent(TypedDict):
    """A PDF in a user message (fastagent's: pi's messages carry text and images only)."""

    type: Literal["document"]
    data: str
    mimeType: str
    name: str


class ThinkingContent(TypedDict):
    type: Literal["thinking"]
    thinking: str
    thinkingSignature: NotRequired[str]


class ToolCall(TypedDict):
    type: Literal["toolCall"]
    id: str
    name: str
    arguments: dict[str, Any]


ContentBlock: TypeAlias = TextContent | ImageContent
UserBlock: TypeAlias = TextContent | ImageContent | DocumentContent
AssistantBlock: TypeAlias = TextContent | ThinkingContent | ToolCall


class Cost(TypedDict):
    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    total: float


class Usage(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    totalTokens: int
    cost: Cost


def empty_usage() -> Usage:
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
    }


class UserMessage(TypedDict):
    role: Literal["user"]
    content: list[UserBlock] | str
    timestamp: int


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[AssistantBlock]
    api: str
    provider: str
    model: str
    usage: Usage
    stopReason: StopReason
    timestamp: int
    errorMessage: NotRequired[str]


class ToolResultMessage(TypedDict):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[ContentBlock]
    isError: bool
    timestamp: int
    details: NotRequired[Any]
    addedToolNames: NotRequired[list[str]]


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


def message_text(message: Mapping[str, Any]) -> str:
    """The text blocks of a message, joined by spaces (a plain-string content as is)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""
