"""Start a turn and look at its first event before answering: a turn that fails at once (a busy
session, a missing key, a full context) is an HTTP error with OpenAI's status, not a 200 stream
holding an error. The usage and finish reason of a completed turn, in OpenAI's terms."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from aiohttp import web

from fastagent_cli.contract import Agent, AgentEvent, Failed, Prompt, Scope
from fastagent_cli.serving.faces.openai.errors import error_response, failure_response

__all__ = ["chat_usage", "finish_reason", "responses_usage", "start_turn"]

log = logging.getLogger("fastagent.host")


async def start_turn(agent: Agent, scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent] | web.Response:
    """The turn's events (its first one already pulled, still first), or the error response."""
    try:
        events = agent.invoke(scope, prompt)
        first = await anext(events)
    except StopAsyncIteration:
        return error_response(
            500, "the agent's stream ended without a result", "server_error", None, "internal_error"
        )
    except Exception:
        log.exception("[host] the agent failed to start a turn for session %s", scope.session)
        return error_response(500, "internal error", "server_error", None, "internal_error")
    if isinstance(first, Failed):
        await _close(events)
        return failure_response(first)
    return _Prepended(first, events)


class _Prepended:
    """``first``, then ``rest``'s events: each of those is ``rest.__anext__()`` itself, so the
    stream costs no extra frame per event (nearly every one is a delta)."""

    def __init__(self, first: AgentEvent, rest: AsyncIterator[AgentEvent]) -> None:
        self._first: AgentEvent | None = first
        self._rest = rest

    def __aiter__(self) -> _Prepended:
        return self

    def __anext__(self) -> Awaitable[AgentEvent]:
        first = self._first
        if first is None:
            return self._rest.__anext__()
        self._first = None
        ready: asyncio.Future[AgentEvent] = asyncio.get_running_loop().create_future()
        ready.set_result(first)
        return ready

    async def aclose(self) -> None:
        self._first = None
        await _close(self._rest)


async def _close(events: AsyncIterator[AgentEvent]) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


def _counts(data: Any) -> tuple[int, int, int]:
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return 0, 0, 0
    cached = int(usage.get("cacheRead") or 0)
    prompt = int(usage.get("input") or 0) + cached + int(usage.get("cacheWrite") or 0)
    return prompt, int(usage.get("output") or 0), cached


def chat_usage(data: Any) -> dict[str, Any]:
    """``completed.data.usage`` (pi's: ``input`` excludes cache reads) as chat completions'."""
    prompt, output, cached = _counts(data)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def responses_usage(data: Any) -> dict[str, Any]:
    prompt, output, cached = _counts(data)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + output,
    }


def finish_reason(data: Any) -> str:
    stop = data.get("stopReason") if isinstance(data, dict) else None
    return "length" if stop == "length" else "stop"
