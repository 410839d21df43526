"""One scheduled turn through the Agent contract, and the audit record it leaves.

The scheduler delivers nothing: it runs the turn, keeps the answer text for the audit, and leaves
delivery to the agent's tools. A ``failed`` terminal with ``session_busy`` means the turn never
started (another turn holds the session), which is the one failure a wake-up may retry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastagent_cli import telemetry
from fastagent_cli.contract import (
    SESSION_BUSY_CODE,
    Agent,
    Completed,
    Failed,
    Prompt,
    Scope,
    Text,
    closing,
)
from fastagent_cli.errors import one_line
from fastagent_cli.state.clock import format_instant
from fastagent_cli.state.run_log import RunHistory

__all__ = ["TurnOutcome", "append_run", "log_outcome", "run_record", "run_turn"]

log = logging.getLogger("fastagent.schedule")


@dataclass(slots=True)
class TurnOutcome:
    ms: int
    reply: str = ""
    error: str | None = None
    busy: bool = False
    """The session was busy: the turn never started."""
    usage: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


async def run_turn(agent: Agent, session: str, prompt: str) -> TurnOutcome:
    """Run one turn to its terminal. Never raises except on cancellation (the caller's stop)."""
    started = time.monotonic()
    parts: list[str] = []
    outcome: TurnOutcome | None
    try:
        with telemetry.root_span(
            "schedule fire",
            trigger="schedule",
            kind=telemetry.INTERNAL,
            attributes={"gen_ai.conversation.id": session},
        ):
            outcome = await _drive(agent, session, prompt, parts)
    except Exception as exc:  # an agent that breaks MUST 2 still leaves an audit line
        outcome = TurnOutcome(0, "".join(parts), one_line(f"the agent raised {type(exc).__name__}: {exc}"))
    if outcome is None:
        outcome = TurnOutcome(0, "".join(parts), "the agent's stream ended without a terminal event")
    outcome.ms = round((time.monotonic() - started) * 1000)
    return outcome


async def _drive(agent: Agent, session: str, prompt: str, parts: list[str]) -> TurnOutcome | None:
    async with closing(agent.invoke(Scope(session), Prompt(prompt))) as events:
        async for event in events:
            if isinstance(event, Text):
                parts.append(event.delta)
            elif isinstance(event, Completed):
                return TurnOutcome(0, "".join(parts), usage=_usage(event.data))
            elif isinstance(event, Failed):
                return TurnOutcome(0, "".join(parts), event.details, event.code == SESSION_BUSY_CODE)
    return None


def _usage(data: Any) -> dict[str, Any] | None:
    usage = data.get("usage") if isinstance(data, dict) else None
    return dict(usage) if isinstance(usage, dict) else None


def run_record(
    name: str,
    session: str,
    fired_at: datetime,
    outcome: str,
    *,
    ms: int = 0,
    reply: str | None = None,
    error: str | None = None,
    usage: dict[str, Any] | None = None,
    wake_id: str | None = None,
) -> dict[str, Any]:
    """``{name, session, firedAt, ms, outcome, reply?, error?, usage?, id?}`` for ``runs.jsonl``."""
    record: dict[str, Any] = {
        "name": name,
        "session": session,
        "firedAt": format_instant(fired_at),
        "ms": ms,
        "outcome": outcome,
    }
    if wake_id is not None:
        record["id"] = wake_id
    if reply is not None:
        record["reply"] = reply
    if error is not None:
        record["error"] = error
    if usage is not None:
        record["usage"] = usage
    return record


async def append_run(runs: RunHistory, record: dict[str, Any]) -> None:
    """Audit a run; a store that refuses is logged, never raised (the run already happened). The
    write is shielded: a turn cancelled meanwhile (a shutdown) still leaves its record."""
    try:
        await asyncio.shield(asyncio.ensure_future(runs.write(record)))
    except OSError as exc:
        log.error("[schedule] could not audit the run of %s in %s: %s", record["name"], runs.where, exc)


def log_outcome(label: str, outcome: TurnOutcome) -> None:
    if outcome.ok:
        log.info("[schedule] %s completed (%dms)", label, outcome.ms)
    else:
        log.error("[schedule] %s failed (%dms): %s", label, outcome.ms, outcome.error)
