"""The wake-up side of the scheduler: fire the agent's own due wake-ups, one at a time.

Every :data:`WAKE_POLL_S` seconds the due wake-ups are claimed and fired in stored order (claim,
fire, then claim the next), each into the session that asked for it, its prompt tagged so the model
knows its own alarm from the user::

    [wake-up 3f2a… fired — YOUR self-scheduled turn, not a user message] <prompt>

Only a busy session is retried, because then the turn never started: a one-shot goes back to the
store for the next poll, up to :data:`MAX_WAKE_ATTEMPTS` times (about an hour), then is dropped; a
recurring occurrence is skipped (its next one is already stored). Any other failure is final and
never replayed, since tools may already have acted. Every outcome is a line in ``runs.jsonl``
under the name ``wake``; a storage fault is logged and the next poll tries again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import datetime, timedelta

from fastagent_cli.contract import Agent
from fastagent_cli.schedules.turns import TurnOutcome, append_run, log_outcome, run_record, run_turn
from fastagent_cli.state.claims import ScheduleClaims, Wakeup
from fastagent_cli.state.clock import Clock
from fastagent_cli.state.run_log import RunHistory

__all__ = ["MAX_WAKE_ATTEMPTS", "WAKE_AUDIT_NAME", "WAKE_POLL_S", "WakePoll", "wake_envelope"]

log = logging.getLogger("fastagent.schedule")

WAKE_POLL_S = 30.0
MAX_WAKE_ATTEMPTS = 120
WAKE_AUDIT_NAME = "wake"
_INTERRUPTED = "interrupted: the server stopped during the turn"
_DROPPED = "dropped after too many busy retries"
_SKIPPED = "occurrence skipped (session busy); the recurrence continues"


def wake_envelope(wakeup: Wakeup) -> str:
    """The woken turn's prompt: the tag naming the wake-up, then its instruction."""
    if wakeup.cron is not None:
        zone = f" {wakeup.tz}" if wakeup.tz else ""
        tag = (
            f'[wake-up {wakeup.id} fired — YOUR recurring self-scheduled turn (cron "{wakeup.cron}"{zone}), '
            f'not a user message; unwake({{ id: "{wakeup.id}" }}) stops it]'
        )
    else:
        tag = f"[wake-up {wakeup.id} fired — YOUR self-scheduled turn, not a user message]"
    return f"{tag} {wakeup.prompt}"


class WakePoll:
    def __init__(
        self,
        agent: Agent,
        claims: ScheduleClaims,
        runs: RunHistory,
        clock: Clock,
        *,
        interval_s: float = WAKE_POLL_S,
        max_attempts: int = MAX_WAKE_ATTEMPTS,
    ) -> None:
        self.agent = agent
        self.claims = claims
        self.runs = runs
        self.clock = clock
        self.interval_s = interval_s
        self.max_attempts = max_attempts

    async def run(self) -> None:
        """Poll forever (until cancelled)."""
        while True:
            await self.poll()
            await self.clock.sleep(self.interval_s)

    async def poll(self) -> int:
        """Fire every wake-up due now, one at a time; returns how many were claimed."""
        claimed = 0
        while True:
            try:
                wakeup = await self.claims.take_due_wakeup(self.clock.now())
            except OSError as exc:
                log.error("[schedule] wake-up poll failed (continuing next poll): %s", exc)
                return claimed
            if wakeup is None:
                return claimed
            claimed += 1
            await self._fire(wakeup)

    async def _fire(self, wakeup: Wakeup) -> None:
        label = f"wake {wakeup.id[:8]}"
        fired_at = self.clock.now()
        log.info("[schedule] %s firing (session=%s)", label, wakeup.session)
        try:
            outcome = await run_turn(self.agent, wakeup.session, wake_envelope(wakeup))
        except asyncio.CancelledError:
            await self._audit(wakeup, fired_at, "failed", error=_INTERRUPTED)
            raise
        if not outcome.busy:
            status = "completed" if outcome.ok else "failed"
            reply = outcome.reply if outcome.ok else None
            await self._audit(wakeup, fired_at, status, outcome, reply=reply, error=outcome.error)
            log_outcome(label, outcome)
        elif wakeup.cron is not None:
            log.error("[schedule] %s: occurrence skipped (session busy); next fires per cron", label)
            await self._audit(wakeup, fired_at, "failed", outcome, error=_SKIPPED)
        elif wakeup.attempts + 1 > self.max_attempts:
            log.error("[schedule] %s: %s", label, _DROPPED)
            await self._audit(wakeup, fired_at, "failed", outcome, error=_DROPPED)
        else:
            retry_at = self.clock.now() + timedelta(seconds=self.interval_s)
            try:
                await self.claims.put_wakeup(replace(wakeup, fire_at=retry_at, attempts=wakeup.attempts + 1))
            except OSError as exc:
                log.error("[schedule] %s: could not defer it (dropped): %s", label, exc)
                await self._audit(
                    wakeup, fired_at, "failed", outcome, error=f"session busy; could not defer: {exc}"
                )
                return
            log.info("[schedule] %s: session busy — retrying next poll", label)
            await self._audit(wakeup, fired_at, "deferred", outcome)

    async def _audit(
        self,
        wakeup: Wakeup,
        fired_at: datetime,
        status: str,
        outcome: TurnOutcome | None = None,
        *,
        reply: str | None = None,
        error: str | None = None,
    ) -> None:
        record = run_record(
            WAKE_AUDIT_NAME,
            wakeup.session,
            fired_at,
            status,
            ms=outcome.ms if outcome is not None else 0,
            reply=reply,
            error=error,
            usage=outcome.usage if outcome is not None else None,
            wake_id=wakeup.id,
        )
        await append_run(self.runs, record)
