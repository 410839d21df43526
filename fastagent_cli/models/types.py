"""The engine's model vocabulary: pi's message shapes, model descriptions, requests and the
stream every wire client produces.

Messages are plain dicts in pi's on-disk form (camelCase keys), so a session line is the message
as the engine holds it, with no conversion on the hot path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, Protocol, TypeAlias, TypedDict

__all__ = [
    "THINKING_LEVELS",
    "AssistantMessage",
    "ContentBlock",
    "ImageContent",
    "Message",
    "ModelClient",
    "ModelInfo",
    "ModelRequest",
    "StreamDelta",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevel",
    "ToolCall",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "empty_usage",
]

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")

Api: TypeAlias = str
"""``openai-completions``, ``openai-responses``, ``openai-codex-responses``, ``anthropic-messages``
or ``scripted``."""


class TextContent(TypedDict):
    type: Literal["text"]
    text: str
    textSignature: NotRequired[str]
    """The Responses API message item this text came from (pi's ``{"v":1,"id":...}``)."""


class ImageContent(TypedDict):
    type: Literal["image"]
    data: str
    mimeType: str


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
    content: list[ContentBlock] | str
    timestamp: int


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[AssistantBlock]
    api: str
    provider: str
    model: str
    usage: Usage
    stopReason: Literal["stop", "length", "toolUse", "error", "aborted"]
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


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model of one provider, as the catalog and ``models.json`` describe it."""

    provider: str
    id: str
    api: Api
    base_url: str = ""
    name: str = ""
    reasoning: bool = False
    input: tuple[str, ...] = ("text",)
    context_window: int = 128_000
    max_tokens: int = 16_384
    cost: Mapping[str, float] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    compat: Mapping[str, Any] = field(default_factory=dict)
    api_key_env: tuple[str, ...] = ()
    api_key: str | None = None
    """A ``models.json`` ``apiKey`` (``$VAR``, ``!command`` or literal), resolved at request time."""
    oauth: bool = False
    """The provider offers a subscription login (``fastagent login``), so a credential is needed
    even when it names no environment variable."""

    @property
    def spec(self) -> str:
        return f"{self.provider}/{self.id}"

    @property
    def supports_images(self) -> bool:
        return "image" in self.input


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a model is told about a tool."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(slots=True)
class ModelRequest:
    model: ModelInfo
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    thinking: ThinkingLevel = "off"
    api_key: str | None = None
    max_tokens: int | None = None
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """A streamed piece of the assistant message: ``kind`` is ``text`` or ``thinking``."""

    kind: Literal["text", "thinking"]
    text: str


class ModelClient(Protocol):
    """A wire client.

    ``stream`` yields :class:`StreamDelta` items as they arrive and, as its last item, the complete
    :class:`AssistantMessage` (content blocks in order, usage, stop reason). Failures raise
    :class:`~fastagent_cli.errors.ProviderError`, classified as retryable or not. Closing the
    iterator (or cancelling the task consuming it) aborts the HTTP request.
    """

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta | AssistantMessage]: ...

    async def aclose(self) -> None: ...
