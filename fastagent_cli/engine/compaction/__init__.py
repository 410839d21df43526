"""Compaction: replace old history with a summary so a session keeps fitting its model.

* :func:`prepare_compaction` (:mod:`.plan`) decides what is summarised and what is kept;
* :func:`compact` makes the summary call(s) (:mod:`.summary`) and appends pi's v3 ``compaction``
  entry ``{summary, firstKeptEntryId, tokensBefore, details: {readFiles, modifiedFiles}}``; the
  record's context then starts with the summary, followed by the kept entries;
* :class:`CompactionSettings` (pi's ``compaction.*``: ``reserve_tokens`` 16 384,
  ``keep_recent_tokens`` 20 000) says when a run compacts by itself: when the context passes
  ``context_window - reserve_tokens``, and once on a context-overflow error
  (:func:`is_context_overflow`);
* the values a session compacts with come from its model's window
  (:meth:`CompactionSettings.for_window`): a share of the window, the configured values as caps
  (a 200K window compacts as pi does; a 4 096-token one reserves 1 024 tokens, keeps the newest
  682 and writes a summary of at most 512), so every window compacts;
* the summary request fits the window too: when what it summarises is longer than the window
  leaves, its middle is left out (:func:`~.summary.shorten`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace

from fastagent_cli.engine.compaction.plan import (
    ALREADY_COMPACTED,
    KEEP_NOTHING,
    NOTHING_TO_COMPACT_TEXT,
    CompactionPlan,
    context_tokens,
    estimate_tokens,
    prepare_compaction,
)
from fastagent_cli.engine.compaction.summary import (
    NO_PRIOR_HISTORY,
    SPLIT_TURN_JOIN,
    SUMMARIZATION_SYSTEM_PROMPT,
    file_lists,
    shorten,
    summary_prompt,
    turn_prefix_prompt,
)
from fastagent_cli.engine.failures import redact
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.traces import ModelSpan, model_span
from fastagent_cli.errors import ProviderError
from fastagent_cli.messages import AssistantMessage, UserMessage, now_ms
from fastagent_cli.models.context_budget import TEMPLATE_MARGIN, estimate_text
from fastagent_cli.models.overflow import is_context_overflow
from fastagent_cli.models.thinking import clamp_thinking
from fastagent_cli.models.types import ModelClient, ModelInfo, ModelRequest, StreamDelta
from fastagent_cli.sessions.record import SessionRecord

__all__ = [
    "ALREADY_COMPACTED",
    "KEEP_NOTHING",
    "NOTHING_TO_COMPACT_TEXT",
    "OVERFLOW_RECOVERY_FAILED",
    "CompactionFailed",
    "CompactionPlan",
    "CompactionResult",
    "CompactionSettings",
    "SummaryModel",
    "compact",
    "context_tokens",
    "estimate_tokens",
    "is_context_overflow",
    "prepare_compaction",
]

OVERFLOW_RECOVERY_FAILED = "Context overflow recovery failed after one compact-and-retry attempt."

RetryNotice = Callable[[int, int, int, str], None]
"""``(attempt, max_attempts, delay_ms, error)``: a summary call is about to be retried."""


RESERVE_SHARE = 4
"""``reserve_tokens`` is at most 1/4 of the window."""
KEEP_SHARE = 6
"""``keep_recent_tokens`` is at most 1/6 of the window (20 000 from a 120K window up)."""
SUMMARY_SHARE = 8
"""A summary is at most 1/8 of the window."""


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    enabled: bool = True
    """Compact by itself (on the threshold, and once on an overflow error); manual compaction
    works either way."""
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000
    context_window: int = 0
    """The window these values were derived for (:meth:`for_window`); 0: not derived."""

    def for_window(self, context_window: int) -> CompactionSettings:
        """The values a model with this window compacts with: a share of the window, the
        configured ones as caps."""
        window = max(1, context_window)
        return replace(
            self,
            reserve_tokens=max(1, min(self.reserve_tokens, window // RESERVE_SHARE)),
            keep_recent_tokens=max(1, min(self.keep_recent_tokens, window // KEEP_SHARE)),
            context_window=window,
        )

    @property
    def max_kept_tokens(self) -> int | None:
        """The most a compaction keeps verbatim: a third of what the threshold allows, so the kept
        part, the summary and the next turn fit (``None`` when not derived: pi's rule)."""
        if not self.context_window:
            return None
        return max(self.keep_recent_tokens, (self.context_window - self.reserve_tokens) // 3)

    @property
    def summary_tokens(self) -> int:
        """The summary call's ``max_tokens``: pi's 0.8 x ``reserve_tokens``, at most 1/8 of the
        window."""
        tokens = int(0.8 * self.reserve_tokens)
        return min(tokens, self.context_window // SUMMARY_SHARE) if self.context_window else tokens

    def over_threshold(self, tokens: int, context_window: int) -> bool:
        return self.enabled and tokens > context_window - self.reserve_tokens


@dataclass(frozen=True, slots=True)
class CompactionResult:
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    entry_id: str


class CompactionFailed(Exception):
    """The summary call failed (its message says why)."""


@dataclass(frozen=True, slots=True)
class SummaryModel:
    client: ModelClient
    model: ModelInfo
    api_key: str | None
    retry: RetryPolicy
    session_id: str | None = None


def _fitted(target: SummaryModel, conversation: str, max_tokens: int, extra: str = "") -> str:
    """``conversation`` shortened so the summary request (system prompt, the prompt around it and
    ``max_tokens`` of answer) fits the model's window."""
    fixed = estimate_text(SUMMARIZATION_SYSTEM_PROMPT) + estimate_text(extra) + 600  # the prompt
    room = target.model.context_window - max_tokens - fixed - TEMPLATE_MARGIN
    return shorten(conversation, max(room, 256))


async def _complete(target: SummaryModel, text: str, max_tokens: int, on_retry: RetryNotice) -> str:
    user: UserMessage = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": now_ms()}
    request = ModelRequest(
        model=target.model,
        system=SUMMARIZATION_SYSTEM_PROMPT,
        messages=[user],
        thinking=clamp_thinking("high", target.model) if target.model.reasoning else "off",
        api_key=target.api_key,
        max_tokens=max_tokens,
        session_id=target.session_id,
    )
    with model_span(request) as traced:  # a model request like a turn's: a span, metrics, retries
        if traced.span is not None:
            traced.span.attributes["fastagent.compaction"] = True
        final = await _summary_answer(target, request, on_retry, traced)
        traced.answered(final)
    return "\n".join(str(b.get("text", "")) for b in final["content"] if b.get("type") == "text")


async def _summary_answer(
    target: SummaryModel, request: ModelRequest, on_retry: RetryNotice, traced: ModelSpan
) -> AssistantMessage:
    attempt = 0
    while True:
        try:
            final: AssistantMessage | None = None
            async for item in target.client.stream(request):
                if not isinstance(item, StreamDelta):
                    final = item
            if final is None:
                raise ProviderError("the model stream ended without a message", retryable=True)
            if final.get("stopReason") in ("error", "aborted"):
                raise CompactionFailed(
                    f"Summarization failed: {final.get('errorMessage') or 'Unknown error'}"
                )
            return final
        except ProviderError as exc:
            if not exc.retryable or attempt >= target.retry.max_retries:
                raise CompactionFailed(f"Summarization failed: {exc.message}") from exc
            attempt += 1
            delay = target.retry.delay_ms(attempt, exc.retry_after)
            traced.retry(attempt, delay, redact(exc.message, [request.api_key]))
            on_retry(attempt, target.retry.max_retries, delay, exc.message)
            await asyncio.sleep(delay / 1000)


async def compact(
    record: SessionRecord,
    plan: CompactionPlan,
    target: SummaryModel,
    settings: CompactionSettings,
    *,
    instructions: str | None = None,
    on_retry: RetryNotice = lambda *_: None,
) -> CompactionResult:
    """Summarise what ``plan`` names and append the ``compaction`` entry; CompactionFailed when
    the summary call fails (nothing is written then)."""
    history_tokens = settings.summary_tokens
    extra = (plan.previous_summary or "") + (instructions or "")

    def fit(text: str, tokens: int) -> str:
        return _fitted(target, text, tokens, extra)

    if plan.split_turn:
        prefix_tokens = min(int(0.5 * settings.reserve_tokens), history_tokens)
        history = (
            _complete(
                target,
                summary_prompt(
                    plan.to_summarize, plan.previous_summary, instructions, lambda t: fit(t, history_tokens)
                ),
                history_tokens,
                on_retry,
            )
            if plan.to_summarize
            else _constant(plan.previous_summary or NO_PRIOR_HISTORY)
        )
        prefix = _complete(
            target,
            turn_prefix_prompt(plan.turn_prefix, lambda t: fit(t, prefix_tokens)),
            prefix_tokens,
            on_retry,
        )
        head, tail = await asyncio.gather(history, prefix)
        summary = f"{head}{SPLIT_TURN_JOIN}{tail}"
    else:
        prompt = summary_prompt(
            plan.to_summarize, plan.previous_summary, instructions, lambda t: fit(t, history_tokens)
        )
        summary = await _complete(target, prompt, history_tokens, on_retry)
    read_files, modified_files, appendix = file_lists(plan.read_files, plan.modified_files)
    summary += appendix
    fields = {
        "summary": summary,
        "firstKeptEntryId": plan.first_kept_entry_id,
        "tokensBefore": plan.tokens_before,
        "details": {"readFiles": read_files, "modifiedFiles": modified_files},
    }
    if plan.first_kept_entry_id == KEEP_NOTHING:
        # Nothing kept: the entry names itself, an id no entry before it has (every pi reader
        # then starts the context with the summary alone).
        entry_id = record.new_id()
        fields.update(id=entry_id, firstKeptEntryId=entry_id)
    entry = record.append("compaction", **fields)
    return CompactionResult(summary, str(entry["firstKeptEntryId"]), plan.tokens_before, entry["id"])


async def _constant(text: str) -> str:
    return text
