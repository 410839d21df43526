"""Compaction: replace old history with a summary so a session keeps fitting its model.

* :func:`prepare_compaction` (:mod:`.plan`) decides what is summarised and what is kept;
* :func:`compact` makes the summary call(s) (:mod:`.summary`) and appends pi's v3 ``compaction``
  entry ``{summary, firstKeptEntryId, tokensBefore, details: {readFiles, modifiedFiles}}``; the
  record's context then starts with the summary, followed by the kept entries;
* :class:`CompactionSettings` (pi's ``compaction.*``: ``reserve_tokens`` 16 384,
  ``keep_recent_tokens`` 20 000) says when a run compacts by itself: when the context passes
  ``context_window - reserve_tokens``, and once on a context-overflow error
  (:func:`is_context_overflow`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from fastagent_cli.engine.compaction.plan import (
    ALREADY_COMPACTED,
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
    summary_prompt,
    turn_prefix_prompt,
)
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.errors import ProviderError
from fastagent_cli.messages import AssistantMessage, UserMessage, now_ms
from fastagent_cli.models.overflow import is_context_overflow
from fastagent_cli.models.thinking import clamp_thinking
from fastagent_cli.models.types import ModelClient, ModelInfo, ModelRequest, StreamDelta
from fastagent_cli.sessions.record import SessionRecord

__all__ = [
    "ALREADY_COMPACTED",
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


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    enabled: bool = True
    """Compact by itself (on the threshold, and once on an overflow error); manual compaction
    works either way."""
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000

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
            return "\n".join(str(b.get("text", "")) for b in final["content"] if b.get("type") == "text")
        except ProviderError as exc:
            if not exc.retryable or attempt >= target.retry.max_retries:
                raise CompactionFailed(f"Summarization failed: {exc.message}") from exc
            attempt += 1
            delay = target.retry.delay_ms(attempt, exc.retry_after)
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
    history_tokens = int(0.8 * settings.reserve_tokens)
    if plan.split_turn:
        history = (
            _complete(
                target,
                summary_prompt(plan.to_summarize, plan.previous_summary, instructions),
                history_tokens,
                on_retry,
            )
            if plan.to_summarize
            else _constant(plan.previous_summary or NO_PRIOR_HISTORY)
        )
        prefix = _complete(
            target, turn_prefix_prompt(plan.turn_prefix), int(0.5 * settings.reserve_tokens), on_retry
        )
        head, tail = await asyncio.gather(history, prefix)
        summary = f"{head}{SPLIT_TURN_JOIN}{tail}"
    else:
        prompt = summary_prompt(plan.to_summarize, plan.previous_summary, instructions)
        summary = await _complete(target, prompt, history_tokens, on_retry)
    read_files, modified_files, appendix = file_lists(plan.read_files, plan.modified_files)
    summary += appendix
    entry = record.append(
        "compaction",
        summary=summary,
        firstKeptEntryId=plan.first_kept_entry_id,
        tokensBefore=plan.tokens_before,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
    )
    return CompactionResult(summary, plan.first_kept_entry_id, plan.tokens_before, entry["id"])


async def _constant(text: str) -> str:
    return text
