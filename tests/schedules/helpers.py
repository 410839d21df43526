"""Test doubles for the scheduler: a clock moved by hand and an agent that answers on cue.

The clock never sleeps for real: ``sleep`` parks the caller until :meth:`FakeClock.advance`
moves time past its deadline. ``advance`` walks deadlines in order, and after each wake-up waits
(in real time, bounded) until the scheduler is parked again, so a test sees every intermediate
instant a real run would see.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastagent_cli.contract import SESSION_BUSY_CODE, AgentEvent, Completed, Failed, Prompt, Scope, Text
from fastagent_cli.state.run_log import RunLog


class FakeClock:
    def __init__(self, start: datetime) -> None:
        self._now = start.astimezone(UTC)
        self._sleepers: list[tuple[datetime, asyncio.Future[None]]] = []
        self.waits: list[float] = []
        """Every duration passed to ``sleep`` (to check the 6 h cap)."""

    def now(self) -> datetime:
        return self._now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (self._now + timedelta(seconds=seconds), future)
        self._sleepers.append(entry)
        try:
            await future
        finally:
            if entry in self._sleepers:
                self._sleepers.remove(entry)

    @property
    def parked(self) -> int:
        return sum(1 for _, f in self._sleepers if not f.done())

    def jump(self, to: datetime) -> None:
        """Move the wall clock without waking anyone (a suspend, an NTP step)."""
        self._now = to.astimezone(UTC)

    async def settle(self, parked: int, within: float = 5.0) -> None:
        """Wait (real time) until ``parked`` callers sleep again."""
        deadline = time.monotonic() + within
        while self.parked != parked:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.parked} sleepers parked, expected {parked}")
            await asyncio.sleep(0.005)

    async def advance(self, to: datetime | timedelta, *, parked: int) -> None:
        """Move time to ``to`` (or by it), waking sleepers in deadline order; after each wake-up
        wait until ``parked`` sleepers are parked again."""
        target = self._now + to if isinstance(to, timedelta) else to.astimezone(UTC)
        while True:
            waiting = [(d, f) for d, f in self._sleepers if not f.done() and d <= target]
            if not waiting:
                break
            earliest = min(d for d, _ in waiting)
            self._now = max(self._now, earliest)
            for deadline, future in waiting:
                if deadline <= self._now:
                    future.set_result(None)
            await self.settle(parked)
        self._now = max(self._now, target)


@dataclass
class CueAgent:
    """An Agent that records each turn and answers from ``answer(session, text)``: a string is
    the reply, ``"busy"`` a ``session_busy`` failure, an Exception text a failure. With ``gate``
    set, turns wait for it first (a turn in flight)."""

    answer: Callable[[str, str], str | Exception] = lambda session, text: f"done: {text}"
    calls: list[tuple[str, str]] = field(default_factory=list)
    gate: asyncio.Event | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)

    def invoke(self, scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]:
        return self._run(scope.session, prompt.text)

    async def _run(self, session: str, text: str) -> AsyncIterator[AgentEvent]:
        reply = self.answer(session, text)
        if reply == "busy":
            yield Failed(
                "session busy: a turn is already in flight for this session", True, SESSION_BUSY_CODE
            )
            return
        self.calls.append((session, text))
        self.started.set()
        try:
            if self.gate is not None:
                await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        if isinstance(reply, Exception):
            yield Failed(str(reply), False)
            return
        yield Text(reply)
        yield Completed({"usage": {"input": 3, "output": 2, "totalTokens": 5}})


def runs_of(state_root: Path, name: str | None = None) -> list[dict[str, Any]]:
    return RunLog(state_root / "schedule").records(name)


async def wait_until(check: Callable[[], bool], within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


def at(text: str) -> datetime:
    """An aware UTC instant from ``"2025-01-06 09:00"`` (or any ISO with an offset)."""
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
