"""One model request of a run: the stream, its retries, and what a run is bound to.

* Text and thinking deltas become ``message_delta`` events as they arrive (``message_started``
  at the first item of an attempt, so a retried attempt that streamed nothing shows nothing).
* A transient failure is retried with backoff and a ``retry_scheduled`` event, but never once
  answer text of that request has streamed: two answers must never be concatenated.
* A failure whose message says the context is too long is marked ``overflow`` (the run compacts
  once and tries again, see :mod:`.run_loop`).
* What an attempt streamed before it was aborted (``stopReason: aborted``) or before a failure that
  ends the run (``stopReason: error``) is recorded with an ``errorMessage``, as pi does: the partial
  answer stays in the history, and the wire clients never send it back to a model.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from fastagent_cli.control import SessionEvent
from fastagent_cli.engine.activation import ActivationState
from fastagent_cli.engine.approvals import ApprovalDesk
from fastagent_cli.engine.budget import UsageMeter
from fastagent_cli.engine.compaction import CompactionSettings, is_context_overflow
from fastagent_cli.engine.failures import redact
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.runs import Run
from fastagent_cli.engine.traces import ModelSpan, model_span
from fastagent_cli.errors import FastagentError, ProviderError
from fastagent_cli.messages import (
    AssistantBlock,
    AssistantMessage,
    StopReason,
    ToolCall,
    Usage,
    empty_usage,
    now_ms,
)
from fastagent_cli.models.structured import OutputFormat
from fastagent_cli.models.types import ModelClient, ModelRequest, StreamDelta
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.tools.base import RunScope, Tool

__all__ = ["ABORTED_MESSAGE", "Emit", "TurnFailure", "TurnOutcome", "TurnSetup", "add_usage", "request_model"]

Emit = Callable[[SessionEvent], None]
log = logging.getLogger("fastagent.agent")

ABORTED_MESSAGE = "Request was aborted"
"""The ``errorMessage`` of a partial answer cut off by an abort (pi's wording)."""


class TurnFailure(FastagentError):
    def __init__(
        self, message: str, retryable: bool = False, *, overflow: bool = False, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.overflow = overflow
        self.failed_code = code


@dataclass(slots=True)
class TurnSetup:
    """A run bound to its session: the first request's shape, the client, the tools."""

    request: ModelRequest
    client: ModelClient
    tools: Mapping[str, Tool]
    activation: ActivationState
    record: SessionRecord
    run: Run
    cwd: str
    max_tool_rounds: int
    retry: RetryPolicy
    compaction: CompactionSettings
    tool_timeout: float | None = None
    scope: RunScope | None = None
    """What tools keep for this run (closed at the settle)."""
    output: OutputFormat | None = None
    """A structured run: the schema its answer must match."""
    approvals: ApprovalDesk | None = None
    resume: list[ToolCall] = field(default_factory=list)
    """The leaf's tool calls an approval answer re-enters the turn with (a restarted server)."""
    meter: UsageMeter | None = None
    """The spend limits checked before each request, the ledger each answer is recorded in."""


@dataclass(slots=True)
class TurnOutcome:
    usage: Usage
    stop_reason: str
    rounds: int
    output: Any = None
    """A structured run's validated answer."""


def add_usage(total: Usage, usage: Mapping[str, Any]) -> None:
    sums = cast(dict[str, Any], total)
    for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
        sums[key] += int(usage.get(key, 0) or 0)
    cost = usage.get("cost") or {}
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        sums["cost"][key] += float(cost.get(key, 0) or 0)


async def request_model(setup: TurnSetup, request: ModelRequest, emit: Emit) -> AssistantMessage:
    """Stream one assistant message (retrying transient failures); TurnFailure when it fails."""
    with model_span(request) as traced:
        message = await _request_model(setup, request, emit, traced)
        traced.answered(message)
        return message


async def _request_model(
    setup: TurnSetup, request: ModelRequest, emit: Emit, traced: ModelSpan
) -> AssistantMessage:
    run = setup.run
    attempt = 0
    while True:
        streamed = False
        started = False
        partial: list[StreamDelta] = []
        try:
            final: AssistantMessage | None = None
            async for item in setup.client.stream(request):
                if not started:
                    started = True
                    emit(run.event("message_started"))
                if isinstance(item, StreamDelta):
                    streamed = streamed or item.kind == "text"
                    partial.append(item)
                    emit(run.event("message_delta", channel=item.kind, delta=item.text))
                else:
                    final = item
            if final is None:
                raise ProviderError("the model stream ended without a message", retryable=True)
            return final
        except asyncio.CancelledError:  # the run was aborted: keep what it had streamed
            if started:
                _finish_partial(setup, request, partial, "aborted", ABORTED_MESSAGE, emit)
            raise
        except ProviderError as exc:
            final_failure = not exc.retryable or streamed or attempt >= setup.retry.max_retries
            if started:
                error = redact(exc.message, [request.api_key])
                kept = partial if final_failure else []
                _finish_partial(setup, request, kept, "error", error, emit)
            if final_failure:
                raise TurnFailure(
                    exc.message, exc.retryable, overflow=is_context_overflow(exc.message)
                ) from exc
            attempt += 1
            delay = setup.retry.delay_ms(attempt, exc.retry_after)
            traced.retry(attempt, delay, redact(exc.message, [request.api_key]))
            emit(
                run.event(
                    "model_retry_scheduled",
                    attempt=attempt,
                    maxAttempts=setup.retry.max_retries,
                    delayMs=delay,
                    error=redact(exc.message, [request.api_key]),
                )
            )
            await asyncio.sleep(delay / 1000)


def _finish_partial(
    setup: TurnSetup,
    request: ModelRequest,
    partial: list[StreamDelta],
    stop: StopReason,
    error: str,
    emit: Emit,
) -> None:
    """Close a started message that will not complete: record what it streamed (if anything) as
    an ``error``/``aborted`` assistant message, then ``message_finished``."""
    content = _partial_content(partial)
    if not content:
        emit(setup.run.event("message_finished", stopReason=stop))
        return
    model = request.model
    message: AssistantMessage = {
        "role": "assistant",
        "content": content,
        "api": model.api,
        "provider": model.provider,
        "model": model.id,
        "usage": empty_usage(),
        "stopReason": stop,
        "errorMessage": error,
        "timestamp": now_ms(),
    }
    try:
        entry = setup.record.append_message(message)
    except Exception:  # the record is unwritable: the run's own outcome still stands
        log.warning("[agent] could not record the partial answer of session %s", setup.record.session)
        emit(setup.run.event("message_finished", stopReason=stop))
        return
    emit(setup.run.event("message_finished", entryId=entry["id"], stopReason=stop))


def _partial_content(partial: list[StreamDelta]) -> list[AssistantBlock]:
    """The streamed deltas as content blocks (consecutive deltas of one kind join one block)."""
    blocks: list[AssistantBlock] = []
    kinds: list[str] = []
    texts: list[list[str]] = []
    for delta in partial:
        if not kinds or kinds[-1] != delta.kind:
            kinds.append(delta.kind)
            texts.append([])
        texts[-1].append(delta.text)
    for kind, pieces in zip(kinds, texts, strict=True):
        joined = "".join(pieces)
        if not joined:
            continue
        if kind == "thinking":
            blocks.append({"type": "thinking", "thinking": joined})
        else:
            blocks.append({"type": "text", "text": joined})
    return blocks
