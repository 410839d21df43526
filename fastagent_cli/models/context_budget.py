"""How much of a model's context window a request fills, and what that leaves for the answer.

A local model often runs with a small window (llama.cpp's default is 4 096 tokens) while the
request asks for up to ``maxTokens`` (16 384 by default) of output. Servers answer that badly:
vLLM refuses every such request, llama-cpp-python lets one answer fill the window and then
closes the next request's stream without a word. So before each request the engine asks
:func:`fit_request`:

* the input is estimated as pi does for compaction (the engine's compaction counts with these
  functions too): the usage the server reported for the last assistant message, plus four
  characters a token for what came after it (or four characters a token for everything, the system
  prompt and the tools included, whichever is more), images at 1 200 tokens;
* the output is clamped to what the declared ``contextWindow`` leaves after the input and a
  margin for the estimate's error (64 tokens plus a tenth of the estimated part);
* when that leaves less than a short answer (512 tokens, 1/8 of a small window, or the model's
  own ``maxTokens`` if lower), the request is refused before it is sent, with a message that says
  so and what to do (:data:`OVERFLOW_ADVICE`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastagent_cli.models.types import Message, ModelInfo, ToolSpec

__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_CHARS",
    "OVERFLOW_ADVICE",
    "ContextFit",
    "context_tokens",
    "estimate_input_tokens",
    "estimate_tokens",
    "fit_request",
    "overflow_message",
    "usage_tokens",
]

CHARS_PER_TOKEN = 4
IMAGE_CHARS = 4_800
"""An image counts as this many characters (pi's rule: 1 200 tokens)."""
TEMPLATE_MARGIN = 64
"""Tokens the chat template adds around messages, beyond their text."""
MIN_ANSWER = 512

OVERFLOW_ADVICE = (
    "start a new session (/new in chat; invoke without --session or --continue), or compact this "
    "one (/compact in chat)"
)
"""What a user can do about a conversation that no longer fits."""


@dataclass(frozen=True, slots=True)
class ContextFit:
    input_tokens: int
    """The estimated input (system prompt, tools and messages)."""
    uncertain: int
    """The part of ``input_tokens`` estimated from characters rather than reported by the server."""
    window: int
    room: int
    """What the window leaves for output (thinking included) after the input and the margin
    (may be <= 0)."""
    max_output: int
    """The output to ask for: what was wanted, at most ``room``."""
    minimum: int
    """The least output worth sending a request for."""

    @property
    def fits(self) -> bool:
        return self.max_output >= self.minimum


def estimate_tokens(message: Mapping[str, Any]) -> int:
    """chars/4, rounded up (images count :data:`IMAGE_CHARS`; a tool call its name and
    arguments)."""
    content = message.get("content")
    if isinstance(content, str):
        return math.ceil(len(content) / CHARS_PER_TOKEN)
    chars = 0
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            chars += len(block.get("text", ""))
        elif kind == "thinking":
            chars += len(block.get("thinking", ""))
        elif kind == "toolCall":
            chars += len(block.get("name", "")) + len(json.dumps(block.get("arguments", {})))
        elif kind == "image":
            chars += IMAGE_CHARS
    return math.ceil(chars / CHARS_PER_TOKEN)


def usage_tokens(usage: Mapping[str, Any]) -> int:
    """The context size a reply's usage reports (``totalTokens``, else the sum of its counts)."""
    total = int(usage.get("totalTokens") or 0)
    if total:
        return total
    return sum(int(usage.get(k) or 0) for k in ("input", "output", "cacheRead", "cacheWrite"))


def _last_report(messages: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """``(reported tokens, index)`` of the last good answer that reported usage, or ``(0, -1)``."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if (
            message.get("role") == "assistant"
            and message.get("stopReason") not in ("error", "aborted")
            and isinstance(message.get("usage"), Mapping)
        ):
            reported = usage_tokens(message["usage"])
            if reported:
                return reported, index
    return 0, -1


def context_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """How full a context is: the last good answer's usage plus estimates for what followed it
    (all estimates when no answer reported usage)."""
    reported, index = _last_report(messages)
    return reported + sum(estimate_tokens(m) for m in messages[index + 1 :])


def estimate_input_tokens(
    system: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()
) -> tuple[int, int]:
    """``(estimate, uncertain)``: the input tokens of a request (system prompt, tools, messages)
    and how many of them are guessed from characters rather than reported by the server; the
    larger of the two readings (usage-based, all characters) counts."""
    overhead = math.ceil(len(system) / CHARS_PER_TOKEN)
    for tool in tools:
        spec = json.dumps(dict(tool.parameters), ensure_ascii=False, default=str)
        overhead += math.ceil((len(tool.name) + len(tool.description) + len(spec)) / CHARS_PER_TOKEN)
    by_chars = overhead + sum(estimate_tokens(m) for m in messages)
    reported, index = _last_report(messages)
    if reported:
        tail = sum(estimate_tokens(m) for m in messages[index + 1 :])
        if reported + tail >= by_chars:
            return reported + tail, tail
    return by_chars, by_chars


def fit_request(
    model: ModelInfo,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec] = (),
    wanted: int | None = None,
) -> ContextFit:
    """How the request fits ``model.context_window``; ``wanted``: the output asked for (default
    ``min(maxTokens, 32000)``, pi's)."""
    estimate, uncertain = estimate_input_tokens(system, messages, tools)
    window = model.context_window
    margin = TEMPLATE_MARGIN + uncertain // 10
    ceiling = wanted or min(model.max_tokens, 32_000)
    room = window - estimate - margin
    minimum = min(MIN_ANSWER, max(1, window // 8), ceiling)
    return ContextFit(estimate, uncertain, window, room, min(ceiling, room), minimum)


def overflow_message(model: ModelInfo, fit: ContextFit) -> str:
    """The one-line refusal for a request that leaves no room for an answer."""
    return (
        f"the conversation no longer fits {model.spec}'s context window: about {fit.input_tokens:,} "
        f"tokens of {fit.window:,} are used, which leaves no room for an answer; {OVERFLOW_ADVICE}"
    )
