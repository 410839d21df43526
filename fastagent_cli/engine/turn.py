"""One turn: the model stream, bounded tool rounds and retries, written to the session as it goes.

* Text and thinking deltas become ``text`` / ``thinking`` events as they arrive.
* Tool calls run (see :mod:`.tool_batch`) and their results go back to the model.
* After ``max_tool_rounds`` rounds the next request withdraws the tools and appends a user note
  that the budget is exhausted, so the model answers with what it has; a tool call in that answer
  fails the turn (asyncai's rule).
* A transient failure is retried with backoff and a ``retrying`` event, but never once answer
  text of that request has streamed: two answers must never be concatenated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from fastagent_cli.contract import AgentEvent, Retrying, Text, Thinking
from fastagent_cli.engine.activation import ActivationState
from fastagent_cli.engine.failures import redact
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.tool_batch import run_tool_batch
from fastagent_cli.errors import FastagentError, ProviderError
from fastagent_cli.messages import (
    TOOL_BUDGET_NOTE,
    AssistantMessage,
    Message,
    ToolCall,
    Usage,
    UserMessage,
    empty_usage,
    now_ms,
)
from fastagent_cli.models.types import ModelClient, ModelRequest, StreamDelta
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.tools.base import Tool

__all__ = ["TurnFailure", "TurnOutcome", "TurnSetup", "run_turn"]


class TurnFailure(FastagentError):
    def __init__(self, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(slots=True)
class TurnSetup:
    request: ModelRequest
    client: ModelClient
    tools: Mapping[str, Tool]
    activation: ActivationState
    record: SessionRecord
    cwd: str
    max_tool_rounds: int
    retry: RetryPolicy
    tool_timeout: float | None = None


@dataclass(slots=True)
class TurnOutcome:
    usage: Usage
    stop_reason: str
    rounds: int


def _add_usage(total: Usage, usage: Mapping[str, Any]) -> None:
    sums = cast(dict[str, Any], total)
    for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
        sums[key] += int(usage.get(key, 0) or 0)
    cost = usage.get("cost") or {}
    for key in ("input", "output", "cacheRead", "cacheWrite", "total"):
        sums["cost"][key] += float(cost.get(key, 0) or 0)


async def _request_with_retry(
    setup: TurnSetup, request: ModelRequest, emit: Callable[[AgentEvent], None]
) -> AssistantMessage:
    attempt = 0
    while True:
        streamed = False
        try:
            final: AssistantMessage | None = None
            async for item in setup.client.stream(request):
                if isinstance(item, StreamDelta):
                    if item.kind == "text":
                        streamed = True
                        emit(Text(item.text))
                    else:
                        emit(Thinking(item.text))
                else:
                    final = item
            if final is None:
                raise ProviderError("the model stream ended without a message", retryable=True)
            return final
        except ProviderError as exc:
            if not exc.retryable or streamed or attempt >= setup.retry.max_retries:
                raise TurnFailure(exc.message, exc.retryable) from exc
            attempt += 1
            delay = setup.retry.delay_ms(attempt, exc.retry_after)
            emit(Retrying(attempt, setup.retry.max_retries, delay, redact(exc.message, [request.api_key])))
            await asyncio.sleep(delay / 1000)


def _tool_calls(message: AssistantMessage) -> list[ToolCall]:
    return [b for b in message["content"] if b.get("type") == "toolCall"]  # type: ignore[misc]


async def run_turn(setup: TurnSetup, user: UserMessage, emit: Callable[[AgentEvent], None]) -> TurnOutcome:
    """Run the turn; raise :class:`TurnFailure` (or a :class:`FastagentError`) on failure."""
    record = setup.record
    record.append_message(user)
    messages: list[Message] = [*setup.request.messages, user]
    usage = empty_usage()
    for round_ in range(setup.max_tool_rounds + 1):
        exhausted = round_ == setup.max_tool_rounds
        active = setup.activation.active()
        request = ModelRequest(
            model=setup.request.model,
            system=setup.request.system,
            messages=_with_note(messages) if exhausted else list(messages),
            tools=() if exhausted else [setup.tools[n].spec for n in active if n in setup.tools],
            thinking=setup.request.thinking,
            api_key=setup.request.api_key,
            max_tokens=setup.request.max_tokens,
            session_id=setup.request.session_id,
        )
        assistant = await _request_with_retry(setup, request, emit)
        record.append_message(assistant)
        messages.append(assistant)
        _add_usage(usage, assistant["usage"])
        calls = _tool_calls(assistant)
        if not calls:
            return TurnOutcome(usage, assistant["stopReason"], round_ + 1)
        if exhausted:
            raise TurnFailure(
                f"the model called a tool after the tool budget "
                f"({setup.max_tool_rounds} rounds) was exhausted"
            )
        results = await run_tool_batch(
            calls,
            tools=setup.tools,
            activation=setup.activation,
            record=record,
            cwd=setup.cwd,
            emit=emit,
            tool_timeout=setup.tool_timeout,
        )
        messages.extend(results)
    raise AssertionError("unreachable: the last round has no tools")


def _with_note(messages: Sequence[Message]) -> list[Message]:
    note: UserMessage = {
        "role": "user",
        "content": [{"type": "text", "text": TOOL_BUDGET_NOTE}],
        "timestamp": now_ms(),
    }
    return [*messages, note]
