"""A compaction inside a run: after a turn that passed the threshold, before opening prompts that
would take the context past it, and once on a context overflow (see :mod:`.run_loop`).

It is announced: ``compaction_started{reason, tokens}`` (the context's estimated size now, system
prompt and tools included) and ``compaction_finished{summary, tokensBefore, tokensAfter}`` (or
``{error}`` / ``{aborted: true}``). A compaction made for a prompt keeps less of the newest
history, so that the prompt fits beside what is kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from fastagent_cli.engine.compaction import CompactionFailed, SummaryModel, compact, prepare_compaction
from fastagent_cli.engine.turn import Emit, TurnSetup
from fastagent_cli.messages import Message

__all__ = ["compact_in_run"]

Measure = Callable[[Sequence[Message] | None], int]
"""The estimated size of a request with these messages (``None``: the run's own)."""


async def compact_in_run(
    setup: TurnSetup,
    emit: Emit,
    reason: str,
    measure: Measure,
    incoming: int = 0,
    waiting: Message | None = None,
    relearn: Callable[[list[Message]], None] | None = None,
) -> list[Message] | None:
    """Compact the run's session; the context after it (``waiting``, the prompt not stored yet,
    appended), or ``None`` when there was nothing to compact or it failed (the run goes on with
    the history it has). ``incoming``: the estimated size of the prompt about to be added, which
    what is kept must leave room for. ``relearn``: called with the context after it, before it is
    measured (the answers it kept no longer measure the context: the rate the server counted at
    does, as a new run would learn it from the record)."""
    settings = setup.compaction
    keep, max_kept = settings.keep_recent_tokens, settings.max_kept_tokens
    if max_kept is not None and incoming:
        max_kept = max(0, max_kept - incoming)
        keep = max(1, min(keep, max_kept))
    plan = prepare_compaction(setup.record.path(), keep, max_kept, again=incoming > 0)
    if isinstance(plan, str):
        return None
    run = setup.run
    before = measure(None)
    emit(run.event("compaction_started", reason=reason, tokens=before))

    def on_retry(attempt: int, limit: int, delay: int, error: str) -> None:
        emit(
            run.event(
                "retry_scheduled",
                operation="compaction",
                attempt=attempt,
                maxAttempts=limit,
                delayMs=delay,
                error=error,
            )
        )

    request = setup.request
    target = SummaryModel(setup.client, request.model, request.api_key, setup.retry, request.session_id)
    try:
        result = await compact(setup.record, plan, target, settings, on_retry=on_retry)
    except asyncio.CancelledError:  # the run was aborted: every start has its finish
        emit(run.event("compaction_finished", aborted=True))
        raise
    except CompactionFailed as exc:
        emit(run.event("compaction_finished", error=str(exc)))
        return None
    messages = setup.record.context().messages
    if waiting is not None:  # the prompt waiting for its answer comes after the summary
        messages.append(waiting)
    if relearn is not None:
        relearn(messages)
    after = measure(messages)
    emit(run.event("compaction_finished", summary=result.summary, tokensBefore=before, tokensAfter=after))
    return messages
