"""The wall clock that schedules and wake-ups read, and the ISO form their state files use.

Everything time-keyed (the scheduler, the ``wake`` tool, ``schedule list``, ``info``) takes a
:class:`Clock`, so tests drive time by hand instead of sleeping through it. The process clock is
the system's, shifted by ``FASTAGENT_CLOCK_OFFSET`` seconds when that is set: a test (or a demo)
moves "now" to just before a cron slot without touching the machine's time. The offset is read
once per process, so a restarted ``dev`` worker keeps the same shifted time.

Instants on disk are UTC with milliseconds and a ``Z`` (``2025-01-31T09:00:00.000Z``), the form
FastAgent writes, so its state files read the same here.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Protocol

from fastagent_cli.errors import ConfigError

__all__ = ["CLOCK_OFFSET_ENV", "Clock", "SystemClock", "format_instant", "parse_instant", "system_clock"]

CLOCK_OFFSET_ENV = "FASTAGENT_CLOCK_OFFSET"


class Clock(Protocol):
    """What time it is, and a way to wait. ``now()`` is timezone-aware (UTC)."""

    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The system clock plus a fixed offset (seconds, may be negative)."""

    def __init__(self, offset_s: float = 0.0) -> None:
        self.offset = timedelta(seconds=offset_s)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


def system_clock(env: Mapping[str, str] | None = None) -> SystemClock:
    """The process clock: honours ``FASTAGENT_CLOCK_OFFSET`` (a ConfigError when it is not a number)."""
    environ = os.environ if env is None else env
    raw = environ.get(CLOCK_OFFSET_ENV, "").strip()
    if not raw:
        return SystemClock()
    try:
        offset = float(raw)
    except ValueError:
        offset = math.nan
    if not math.isfinite(offset):
        raise ConfigError(f'{CLOCK_OFFSET_ENV}="{raw}" is not a number of seconds')
    return SystemClock(offset)


def format_instant(moment: datetime) -> str:
    """``2025-01-31T09:00:00.000Z``: UTC, milliseconds (truncated), ``Z``."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_instant(text: str) -> datetime:
    """The aware UTC instant of an ISO 8601 string with an offset or ``Z``; ValueError otherwise."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset")
    return moment.astimezone(UTC)
