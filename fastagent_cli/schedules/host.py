"""The scheduler as the serving path runs it: cron loops for ``schedules/*.toml`` and, with
``self_schedule = true``, the wake-up poll.

It runs only under ``dev`` and ``start`` (``invoke`` and ``fire`` never start it), and only when
the agent has schedules or self-scheduling is on. It speaks the Agent contract and the claims
interface, nothing else: a test drives it with a fake agent and a hand-moved clock.

::

    host = await prepare_schedule_host(opened)   # reads the claims: a fault fails startup
    if host is not None:
        host.start()                             # after the server listens: arm, catch up once
        ...
        await host.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastagent_cli.contract import Agent
from fastagent_cli.errors import ScheduleError
from fastagent_cli.schedules.cron_loop import CronScheduler, ScheduledPrompt
from fastagent_cli.schedules.wake_poll import WAKE_POLL_S, WakePoll
from fastagent_cli.state.claims import ScheduleClaims, open_schedule_claims
from fastagent_cli.state.clock import Clock, system_clock
from fastagent_cli.state.run_log import RunHistory, RunLog

if TYPE_CHECKING:
    from fastagent_cli.assembly import OpenedAgent

__all__ = ["ScheduleHost", "prepare_schedule_host"]

log = logging.getLogger("fastagent.schedule")


class ScheduleHost:
    def __init__(
        self, cron: CronScheduler, wakes: WakePoll | None, pending: int, warnings: list[str]
    ) -> None:
        self.cron = cron
        self.wakes = wakes
        self.pending = pending
        self.warnings = warnings
        self._tasks: set[asyncio.Task[None]] = set()

    @classmethod
    async def prepare(
        cls,
        agent: Agent,
        schedules: Sequence[ScheduledPrompt],
        state_root: Path,
        *,
        self_schedule: bool,
        clock: Clock | None = None,
        claims: ScheduleClaims | None = None,
        runs: RunHistory | None = None,
        poll_s: float = WAKE_POLL_S,
    ) -> ScheduleHost | None:
        """Read the claims and build the host; ``None`` when there is nothing to schedule. A
        storage fault reading the claims is a ScheduleError (startup fails)."""
        clock = clock or system_clock()
        claims = claims or open_schedule_claims(state_root)
        runs = runs or RunLog(state_root / "schedule")
        cron = CronScheduler(agent, schedules, claims, runs, clock)
        if schedules:
            await cron.load()
        warnings: list[str] = []
        try:
            pending = len(await claims.wakeups())
        except OSError as exc:
            if self_schedule:
                raise ScheduleError(f"cannot read the pending wake-ups: {exc}") from None
            pending = 0
        if not self_schedule and pending:
            warnings.append(
                f"{pending} pending wake-up(s) in {state_root / 'schedule' / 'wakeups.json'} will not fire "
                "while self_schedule is off (`fastagent schedule list` shows them, "
                "`fastagent schedule cancel <id>` removes one)"
            )
        if not schedules and not self_schedule:
            return cls(cron, None, pending, warnings) if warnings else None
        wakes = WakePoll(agent, claims, runs, clock, interval_s=poll_s) if self_schedule else None
        return cls(cron, wakes, pending, warnings)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.cron.schedules]

    def startup_lines(self) -> list[str]:
        """``schedules: a, b`` and the wake-up poll, for the serving startup report."""
        lines = []
        if self.cron.schedules:
            lines.append(f"schedules: {', '.join(self.names)}")
        if self.wakes is not None:
            lines.append(
                f"wake-ups:  {self.pending} pending (self_schedule; polled every {self.wakes.interval_s:g}s)"
            )
        return lines

    def start(self) -> None:
        """Arm every schedule (firing a missed slot once) and start the wake-up poll."""
        for schedule, due in self.cron.arm():
            self._spawn(schedule.name, self.cron.run(schedule, due))
        if self.wakes is not None:
            self._spawn("wake-up poll", self.wakes.run())

    @property
    def running(self) -> bool:
        return any(not t.done() for t in self._tasks)

    async def stop(self, within: float = 0.5) -> None:
        """Stop waiting and abort turns in flight (they are audited as interrupted)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            with contextlib.suppress(Exception):
                await asyncio.wait(tasks, timeout=within)
        self._tasks.clear()

    def _spawn(self, label: str, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work, name=f"schedule {label}")
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._finished(label, done))

    def _finished(self, label: str, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("[schedule] %s: stopped unexpectedly: %s: %s", label, type(error).__name__, error)


async def prepare_schedule_host(opened: OpenedAgent) -> ScheduleHost | None:
    """The host for an opened agent directory (its schedules, claims and ``self_schedule``)."""
    return await ScheduleHost.prepare(
        opened.agent,
        opened.surface.schedules.schedules,
        opened.state_root,
        self_schedule=opened.config.self_schedule,
        claims=opened.backend.schedule_claims(),
        runs=opened.backend.run_log(),
    )
