"""The model vocabulary: model descriptions, requests and the stream every wire client produces.

pi's message shapes live one floor down, in :mod:`fastagent_cli.messages` (shared with
``sessions/``); they are re-exported here for the wire clients.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from fastagent_cli.messages import (
    THINKING_LEVELS,
    AssistantBlock,
    AssistantMessage,
    ContentBlock,
    Cost,
    DocumentContent,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserBlock,
    UserMessage,
    empty_usage,
)
from fastagent_cli.models.structured import OutputFormat

__all__ = [
    "THINKING_LEVELS",
    "AssistantBlock",
    "AssistantMessage",
    "ContentBlock",
    "Cost",
    "DocumentContent",
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
    "UserBlock",
    "UserMessage",
    "empty_usage",
]

Api: TypeAlias = str
"""``openai-completions``, ``openai-responses``, ``openai-codex-responses``, ``anthropic-messages``
or ``scripted``."""


_PDF_APIS = ("openai-completions", "openai-responses")
_PDF_PROVIDERS = ("openai", "openrouter")


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
    key_optional: bool = False
    """A key is sent when one is set (``LOCAL_API_KEY``, a stored one), but none is needed: a
    local server (llama.cpp, vLLM, LM Studio) runs without one."""
    timeouts: Mapping[str, float] = field(default_factory=dict)
    """The provider's own ``connect`` / ``first_byte`` / ``between_chunks`` timeouts (seconds),
    over the engine's (see :mod:`~fastagent_cli.models.provider_transport`)."""
    ca_file: str | None = None
    """A PEM bundle its ``https://`` certificates are checked against instead of the default."""

    @property
    def spec(self) -> str:
        return f"{self.provider}/{self.id}"

    @property
    def supports_images(self) -> bool:
        return "image" in self.input

    @property
    def supports_pdf(self) -> bool:
        """Whether PDFs go to it as documents (else the engine sends their text): ``compat``
        ``supportsPdf`` when set, else Anthropic's Messages API, OpenAI's own (chat completions
        and the Responses API) and OpenRouter, for models with image input, and the scripted one."""
        flag = self.compat.get("supportsPdf")
        if isinstance(flag, bool):
            return flag
        if self.api == "scripted":
            return True
        if not self.supports_images:
            return False
        if self.api == "anthropic-messages":
            return True
        return self.api in _PDF_APIS and self.provider in _PDF_PROVIDERS


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
    memo: MutableMapping[Any, Any] | None = None
    """Scratch space of the conversation, where a wire client may keep what it derived from
    ``messages`` (their encoded JSON) for the next request of the same conversation; the engine
    passes the session record's, so it lives and goes with the record's cached index."""
    output_limit: int | None = None
    """The most output tokens (thinking included) the model's context window leaves after this
    request's input (see :mod:`fastagent_cli.models.context_budget`); ``None``: no limit known."""
    output: OutputFormat | None = None
    """The JSON Schema the answer must match (a structured run), sent the API's native way
    (:func:`fastagent_cli.models.structured.native_mode`)."""
    server_ratio: float | None = None
    """What the server counts for a request as a share of the estimate, learnt earlier in the
    session (:func:`~fastagent_cli.models.context_budget.learn_server_ratio`); ``None``: not yet."""


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
