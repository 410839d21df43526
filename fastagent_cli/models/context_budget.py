"""How much of a model's context window a request fills, and what that leaves for the answer.

A local model often runs with a small window (llama.cpp's default is 4 096 tokens) while the
request asks for up to ``maxTokens`` (16 384 by default) of output. Servers answer that badly:
vLLM refuses every such request, llama-cpp-python lets one answer fill the window and then
closes the next request's stream without a word. So before each request the engine asks
:func:`fit_request`:

* the input is estimated as pi does for compaction (the engine's compaction counts with these
  functions too): the usage the server reported for the last assistant message, plus an estimate
  for what came after it (an estimate of everything, the system prompt and the tools included,
  while no answer reported usage), images at 1 200 tokens;
* the estimate is conservative for dense text (:func:`estimate_text`): letters and spaces four to
  a token, but every digit, punctuation mark or symbol and every newline a token of its own (a
  tokenizer splits numbers and CSV that way), other characters a token per two bytes of UTF-8. A
  CSV paste estimated at four characters a token would be half its real size;
* once the server has reported usage, the estimate is corrected by what it reported: when the
  server counted more than the estimate of the same input, what came after it is scaled by that
  ratio (at most :data:`MAX_CORRECTION`), so a session of content the estimate underrates keeps
  being measured by the server's count, not by the guess;
* how the server's count compares with the estimate (JSON tool schemas and a Markdown system
  prompt are overrated: after a compaction a real llama.cpp server counted 2 725 where the
  estimate read 3 441) is learnt from the last answer that reported usage
  (:func:`learn_server_ratio`, on the context it was given), so where no answer of the context
  reported usage (after a compaction, which leaves none that measures the new context) the
  estimate is taken at the server's rate (``server_ratio``, at least :data:`MIN_SERVER_RATIO`)
  instead of the bare guess;
* the output is clamped to what the declared ``contextWindow`` leaves after the input and a
  margin for the estimate's error (64 tokens plus a tenth of the estimated part), and by default
  to :data:`OUTPUT_SHARE` of the window: one long answer must leave room for the next turn
  (16 384 tokens of a 200K window, 1 024 of a 4 096 one);
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

from fastagent_cli.messages import COMPACTION_SUMMARY_PREFIX
from fastagent_cli.models.token_counts import (
    CHARS_PER_TOKEN,
    IMAGE_CHARS,
    TokenCounts,
    estimate_text,
    estimate_tokens,
    message_counts,
)
from fastagent_cli.models.types import Message, ModelInfo, ToolSpec

__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_CHARS",
    "OUTPUT_SHARE",
    "OVERFLOW_ADVICE",
    "ContextFit",
    "TokenCounts",
    "context_tokens",
    "default_output",
    "estimate_input_tokens",
    "estimate_text",
    "estimate_tokens",
    "fit_request",
    "has_report",
    "learn_server_ratio",
    "overflow_message",
    "overhead_tokens",
    "usage_tokens",
]

TEMPLATE_MARGIN = 64
"""Tokens the chat template adds around messages, beyond their text."""
MIN_ANSWER = 512
OUTPUT_SHARE = 4
"""The default output is at most ``1/OUTPUT_SHARE`` of the context window."""
MAX_CORRECTION = 4.0
"""The most the server's reported usage scales the estimate of what came after it."""
MIN_SERVER_RATIO = 0.5
"""The least share of its estimate a request is counted at (a report's floor, too)."""

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


def usage_tokens(usage: Mapping[str, Any]) -> int:
    """The context size a reply's usage reports (``totalTokens``, else the sum of its counts)."""
    total = int(usage.get("totalTokens") or 0)
    if total:
        return total
    return sum(int(usage.get(k) or 0) for k in ("input", "output", "cacheRead", "cacheWrite"))


def _stamp(message: Mapping[str, Any]) -> int:
    stamp = message.get("timestamp")
    return stamp if isinstance(stamp, int) else 0


def _compacted_at(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The time of the compaction a context starts with (its summary message carries it)."""
    if not messages or messages[0].get("role") != "user":
        return None
    content = messages[0].get("content")
    first = content[0] if isinstance(content, list) and content else None
    text = first.get("text") if isinstance(first, Mapping) else content
    return (
        _stamp(messages[0]) if isinstance(text, str) and text.startswith(COMPACTION_SUMMARY_PREFIX) else None
    )


def _last_report(messages: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """``(reported tokens, index)`` of the last good answer that reported usage, or ``(0, -1)``.
    After a compaction, an answer it kept (older than the compaction) reported the size of a
    context that no longer exists: it does not count."""
    compacted = _compacted_at(messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if (
            message.get("role") == "assistant"
            and message.get("stopReason") not in ("error", "aborted")
            and isinstance(message.get("usage"), Mapping)
            and (compacted is None or _stamp(message) > compacted)
        ):
            reported = usage_tokens(message["usage"])
            if reported:
                return reported, index
    return 0, -1


def has_report(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Does an answer of this context (not one kept from before its compaction) report usage?"""
    return _last_report(messages)[0] > 0


def context_tokens(
    messages: Sequence[Mapping[str, Any]],
    system: str = "",
    tools: Sequence[ToolSpec] = (),
    server_ratio: float | None = None,
    counts: TokenCounts | None = None,
) -> int:
    """How full a context is: the request's input as :func:`estimate_input_tokens` measures it
    (the last good answer's usage, corrected estimates for what followed it; pass the system
    prompt and the tools to count them when no answer reported usage yet)."""
    return estimate_input_tokens(system, messages, tools, server_ratio, counts)[0]


def overhead_tokens(system: str, tools: Sequence[ToolSpec] = ()) -> int:
    """The estimated tokens of a request's system prompt and tool definitions."""
    overhead = estimate_text(system)
    for tool in tools:
        spec = json.dumps(dict(tool.parameters), ensure_ascii=False, default=str)
        overhead += estimate_text(tool.name) + estimate_text(tool.description) + estimate_text(spec)
    return overhead


def learn_server_ratio(
    system: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec],
    answer: Mapping[str, Any],
    counts: TokenCounts | None = None,
) -> float | None:
    """What the server counted for a request and its ``answer`` (the answer's reported usage) as a
    share of their estimate, between :data:`MIN_SERVER_RATIO` and :data:`MAX_CORRECTION`; ``None``
    when the answer reports nothing."""
    usage = answer.get("usage")
    if answer.get("stopReason") in ("error", "aborted") or not isinstance(usage, Mapping):
        return None
    reported = usage_tokens(usage)
    estimate = overhead_tokens(system, tools) + sum(message_counts(messages, counts))
    estimate += estimate_tokens(answer)
    if not reported or estimate <= 0:
        return None
    return min(MAX_CORRECTION, max(MIN_SERVER_RATIO, reported / estimate))


def estimate_input_tokens(
    system: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] = (),
    server_ratio: float | None = None,
    counts: TokenCounts | None = None,
) -> tuple[int, int]:
    """``(estimate, uncertain)``: the input tokens of a request (system prompt, tools, messages)
    and how many of them are guessed rather than reported by the server. Once the server reported
    usage, its count stands for what it counted, even when the estimate says more (the estimate is
    conservative for JSON tool schemas and punctuation: on a real 4 096-token llama.cpp server it
    read 3 298 where the server counted 2 218, and ended the session at its fourth turn); the
    guess for what followed the last report is scaled by how much more the server counted than
    the estimate of what it reported on (never down). A report under half the estimate is not
    believed below that half.

    Where no answer of the context reported usage (after a compaction: the answers it kept
    reported a context that is gone), ``server_ratio`` learnt from an earlier report
    (:func:`learn_server_ratio`) stands in for one: the system prompt, the tools, the summary and
    what the compaction kept are counted at that rate; what came after the compaction is scaled
    by it only upwards, as the guess after a report is.

    ``counts``: the conversation's kept per-message counts (:class:`TokenCounts`; the same
    numbers, without counting the unchanged history again)."""
    estimates = message_counts(messages, counts)
    by_chars = overhead_tokens(system, tools) + sum(estimates)
    reported, index = _last_report(messages)
    if reported:
        after = sum(estimates[index + 1 :])
        covered = by_chars - after  # what the report counted: the input and the answer itself
        ratio = min(MAX_CORRECTION, max(1.0, reported / covered)) if covered > 0 else 1.0
        tail = math.ceil(after * ratio)
        # The server's count wins over the guess, in both directions, down to half the guess (a
        # report below that is taken for a server that does not count the whole input).
        return max(reported + tail, by_chars // 2), tail
    if server_ratio is not None:
        ratio = min(MAX_CORRECTION, max(MIN_SERVER_RATIO, server_ratio))
        compacted = _compacted_at(messages)
        new = sum(e for m, e in zip(messages, estimates, strict=True) if compacted and _stamp(m) > compacted)
        by_chars = math.ceil((by_chars - new) * ratio) + math.ceil(new * max(1.0, ratio))
    return by_chars, by_chars


def fit_request(
    model: ModelInfo,
    system: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec] = (),
    wanted: int | None = None,
    server_ratio: float | None = None,
    counts: TokenCounts | None = None,
) -> ContextFit:
    """How the request fits ``model.context_window``; ``wanted``: the output asked for (default
    ``min(maxTokens, 32000)``, pi's, and at most :data:`OUTPUT_SHARE` of the window);
    ``server_ratio``: the session's learnt server/estimate rate (:func:`estimate_input_tokens`)."""
    estimate, uncertain = estimate_input_tokens(system, messages, tools, server_ratio, counts)
    window = model.context_window
    margin = TEMPLATE_MARGIN + uncertain // 10
    ceiling = wanted or default_output(model)
    room = window - estimate - margin
    minimum = min(MIN_ANSWER, max(1, window // 8), ceiling)
    return ContextFit(estimate, uncertain, window, room, min(ceiling, room), minimum)


def default_output(model: ModelInfo) -> int:
    """The output a request asks for when it names none: ``min(maxTokens, 32000)`` (pi's), at
    most :data:`OUTPUT_SHARE` of the context window (never below :data:`MIN_ANSWER`)."""
    share = max(MIN_ANSWER, model.context_window // OUTPUT_SHARE)
    return max(1, min(model.max_tokens, 32_000, share))


def overflow_message(model: ModelInfo, fit: ContextFit) -> str:
    """The one-line refusal for a request that leaves no room for an answer."""
    return (
        f"the conversation no longer fits {model.spec}'s context window: about {fit.input_tokens:,} "
        f"tokens of {fit.window:,} are used, which leaves no room for an answer; {OVERFLOW_ADVICE}"
    )
