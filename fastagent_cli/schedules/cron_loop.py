"""The cron side of the scheduler: one waiting loop per schedule file.

* **Claim before invoke.** When a slot comes, it is claimed first (the fire instant recorded);
  only then does the turn start. A process killed mid-turn therefore never fires that slot again,
  and of several instances sharing the claims (the database backend) only the first to claim a
  slot runs it; the others log that another instance took it.
* **Catch up once.** At start, a schedule whose next instant after its last claim has passed
  fires once at once (``catching up a missed run``), however many slots the downtime spanned,
  then waits for the next slot after now. A schedule that never fired anchors on now: it never
  fires for a slot that passed before it existed.
* **Re-read the clock.** A wait lasts at most :data:`MAX_WAIT_S` before the wall clock is read
  again, so suspend/resume and clock changes cost at most that much drift; a slot found past
  after a long sleep fires once. A cron with no future instant is warned about and not armed.
* **Faults.** A claim that cannot be written skips that run (audited ``failed``) and the schedule
  stays armed; the boot read of the claims failing stops startup (:meth:`CronScheduler.load`).
* **Overlap.** While a run is in flight its schedule does not fire again; a slot that passes
  meanwhile is skipped with a warning (the session would be busy anyway).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from fastagent_cli.contract import Agent
from fastagent_cli.errors import ScheduleError
from fastagent_cli.schedules.turns import append_run, log_outcome, run_record, run_turn
from fastagent_cli.state.claims import ScheduleClaims
from fastagent_cli.state.clock import Clock, format_instant
from fastagent_cli.state.cron import next_after
from fastagent_cli.state.run_log import RunHistory

__all__ = ["MAX_WAIT_S", "CronScheduler", "ScheduledPrompt"]

log = logging.getLogger("fastagent.schedule")

MAX_WAIT_S = 6 * 3600.0
INTERRUPTED = "interrupted: the server stopped during the turn"


class ScheduledPrompt(Protocol):
    """What the scheduler needs of a schedule (``definition.schedules.Schedule`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def cron(self) -> str: ...

    @property
    def tz(self) -> str: ...

    @property
    def prompt(self) -> str: ...

    @property
    def session(self) -> str: ...


class CronScheduler:
    def __init__(
        self,
        agent: Agent,
        schedules: Sequence[ScheduledPrompt],
        claims: ScheduleClaims,
        runs: RunHistory,
        clock: Clock,
        *,
        max_wait_s: float = MAX_WAIT_S,
    ) -> None:
        self.agent = agent
        self.schedules = list(schedules)
        self.claims = claims
        self.runs = runs
        self.clock = clock
        self.max_wait_s = max_wait_s
        self.last_fired: dict[str, datetime] = {}
        self.next_due: dict[str, datetime] = {}
        """Each armed schedule's next instant (what is waited for now)."""

    async def load(self) -> None:
        """Read the last claims (boot). A storage fault is a ScheduleError: startup fails."""
        try:
            self.last_fired = await self.claims.last_fired()
        except OSError as exc:
            raise ScheduleError(f"cannot read the schedule claims: {exc}") from None

    def arm(self) -> list[tuple[ScheduledPrompt, datetime]]:
        """Each schedule to run and its first instant (a past one is a catch-up, fired at once)."""
        now = self.clock.now()
        armed: list[tuple[ScheduledPrompt, datetime]] = []
        for schedule in self.schedules:
            last = self.last_fired.get(schedule.name)
            due = next_after(schedule.cron, schedule.tz, last or now)
            if due is None:
                log.warning(
                    '[schedule] %s: cron "%s" will never fire again — not armed', schedule.name, schedule.cron
                )
                continue
            if due <= now and last is not None:
                log.info(
                    "[schedule] %s: catching up a missed run (last fired %s)",
                    schedule.name,
                    format_instant(last),
                )
            else:
                log.debug("[schedule] %s: next run at %s", schedule.name, format_instant(due))
            self.next_due[schedule.name] = due
            armed.append((schedule, due))
        return armed

    async def run(self, schedule: ScheduledPrompt, due: datetime) -> None:
        """Wait for each slot and fire it, until the cron has no next instant."""
        while True:
            await self._wait_until(due)
            fired_at = await self.fire(schedule, due)
            now = self.clock.now()
            following = next_after(schedule.cron, schedule.tz, now)
            if following is None:
                self.next_due.pop(schedule.name, None)
                log.warning('[schedule] %s: cron "%s" will never fire again', schedule.name, schedule.cron)
                return
            missed = next_after(schedule.cron, schedule.tz, fired_at)
            if missed is not None and missed < now:
                log.warning(
                    "[schedule] %s: the run outlasted its next slot (%s); skipped it, next run at %s",
                    schedule.name,
                    format_instant(missed),
                    format_instant(following),
                )
            due = self.next_due[schedule.name] = following

    async def _wait_until(self, due: datetime) -> None:
        while (now := self.clock.now()) < due:
            await self.clock.sleep(min((due - now).total_seconds(), self.max_wait_s))

    async def fire(self, schedule: ScheduledPrompt, slot: datetime | None = None) -> datetime:
        """Claim ``slot`` (default: now), run the turn, audit it; returns the claimed instant.
        A slot another instance claimed first is skipped (nothing runs, nothing is audited)."""
        fired_at = self.clock.now()
        try:
            claimed = await self.claims.claim_slot(schedule.name, slot or fired_at, fired_at)
        except OSError as exc:
            log.error(
                "[schedule] %s: fire failed (skipping this run, schedule stays armed): %s", schedule.name, exc
            )
            error = f"run skipped — fire failed: {exc}"
            await append_run(
                self.runs, run_record(schedule.name, schedule.session, fired_at, "failed", error=error)
            )
            return fired_at
        self.last_fired[schedule.name] = fired_at
        if not claimed:
            log.info(
                "[schedule] %s: the slot at %s was claimed by another instance",
                schedule.name,
                format_instant(slot or fired_at),
            )
            return fired_at
        log.info("[schedule] %s firing (session=%s)", schedule.name, schedule.session)
        try:
            outcome = await run_turn(self.agent, schedule.session, schedule.prompt)
        except asyncio.CancelledError:
            await append_run(
                self.runs, run_record(schedule.name, schedule.session, fired_at, "failed", error=INTERRUPTED)
            )
            raise
        await append_run(
            self.runs,
            run_record(
                schedule.name,
                schedule.session,
                fired_at,
                "completed" if outcome.ok else "failed",
                ms=outcome.ms,
                reply=outcome.reply if outcome.ok else None,
                error=outcome.error,
                usage=outcome.usage,
            ),
        )
        log_outcome(schedule.name, outcome)  # after the audit: "completed" means recorded
        return fired_at
