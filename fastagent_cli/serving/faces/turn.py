"""One turn run for a protocol face: the agent's events folded into the answer, with a callback
per event (progress) and the turn aborted when the caller is cancelled.

::

    outcome = await run_turn(agent, "s1", "hello", on_event=report)
    if outcome.failed is not None: ...          # Failed (session_busy, aborted, a model error)
    outcome.text                                # the answer's text deltas joined

The faces share the agent, and with it the session lease: a turn on a busy session is a
``Failed`` with code ``session_busy`` here as on ``/invoke`` (each face answers it in its own
protocol's words).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastagent_cli.contract import (
    SESSION_BUSY_CODE,
    Agent,
    AgentEvent,
    Completed,
    Failed,
    Prompt,
    Retrying,
    Scope,
    Text,
    Thinking,
    ToolEnded,
    ToolStarted,
    closing,
)

__all__ = ["EventCallback", "TurnOutcome", "describe_event", "new_session_id", "run_turn"]

EventCallback = Callable[[AgentEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    text: str
    failed: Failed | None = None

    @property
    def busy(self) -> bool:
        return self.failed is not None and self.failed.code == SESSION_BUSY_CODE


def new_session_id(prefix: str) -> str:
    """A fresh session id for a client that did not name one (``mcp-3f9c2a1b7d04``)."""
    return f"{prefix}-{secrets.token_hex(6)}"


async def run_turn(
    agent: Agent, session: str, text: str, on_event: EventCallback | None = None
) -> TurnOutcome:
    """Run one turn to its terminal event. Cancelling the caller closes the agent's stream, which
    aborts the run (its tools stopped, the session's lease released)."""
    parts: list[str] = []
    async with closing(agent.invoke(Scope(session), Prompt(text))) as events:
        async for event in events:
            if on_event is not None:
                await on_event(event)
            if isinstance(event, Text):
                parts.append(event.delta)
            elif isinstance(event, Completed):
                return TurnOutcome("".join(parts))
            elif isinstance(event, Failed):
                return TurnOutcome("".join(parts), event)
    return TurnOutcome("".join(parts), Failed("the agent's stream ended without a terminal event", True))


def describe_event(event: AgentEvent) -> str | None:
    """A one-line progress message for an event (``None``: nothing worth saying). Deltas of one
    kind say the same thing, so a face that reports only changes sends one line per phase."""
    if isinstance(event, ToolStarted):
        return f"running tool {event.name}"
    if isinstance(event, ToolEnded):
        return "tool failed" if event.is_error else "tool done"
    if isinstance(event, Retrying):
        return f"model unavailable, retrying ({event.attempt}/{event.max_attempts})"
    if isinstance(event, Thinking):
        return "thinking"
    if isinstance(event, Text):
        return "answering"
    return None
