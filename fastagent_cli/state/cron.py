"""Cron arithmetic: the one place that touches ``croniter`` (imported on first use).

An expression has exactly five fields (minute, hour, day of month, month, day of week; names like
``MON-FRI``, ranges, steps, ``L`` and ``#`` work) or is one of the nicknames ``@yearly``,
``@annually``, ``@monthly``, ``@weekly``, ``@daily``, ``@midnight``, ``@hourly``. It is read in an
IANA time zone (default ``UTC``), so ``0 9 * * *`` in ``Europe/Paris`` is 09:00 Paris time all year.

Daylight saving time, as cron has always done it:

* a wall time skipped when clocks go forward fires once, at the first instant after the gap;
* a wall time that happens twice when clocks go back fires once (the first time) when the hour
  field names hours; a wildcard hour (``*``, ``*/2``) keeps firing through both passes, since it
  means "every so often" rather than "at this time of day".

This module lives in the state layer because the innermost user of it is the wake-up store
(a recurring wake advances in place when it is claimed); every layer above may import it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["NICKNAMES", "cron_error", "next_after", "resolve_zone"]

NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELDS = "minute hour day-of-month month day-of-week"


@lru_cache(maxsize=256)
def resolve_zone(tz: str) -> ZoneInfo:
    """The zone named ``tz``; ValueError with a one-line reason when there is none."""
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f'unknown time zone "{tz}" (use an IANA name such as "Europe/Paris" or "UTC")'
        ) from None


def _expand(expr: str) -> str:
    text = " ".join(expr.split())
    if text.startswith("@"):
        if text.lower() not in NICKNAMES:
            raise ValueError(f'unknown cron nickname "{text}" (known: {", ".join(NICKNAMES)})')
        return NICKNAMES[text.lower()]
    count = len(text.split(" ")) if text else 0
    if count != 5:
        raise ValueError(f'cron "{expr}" has {count} field(s); it needs 5 ({_FIELDS})')
    return text


@lru_cache(maxsize=512)
def _checked(expr: str) -> str:
    from croniter import croniter

    expanded = _expand(expr)
    try:
        croniter(expanded, datetime(2000, 1, 1, tzinfo=UTC))
    except (ValueError, KeyError, TypeError) as exc:  # croniter's errors are ValueError subclasses
        detail = str(exc) or type(exc).__name__
        raise ValueError(f'invalid cron "{expr}": {detail}') from None
    return expanded


def cron_error(expr: str, tz: str = "UTC") -> str | None:
    """Why ``expr`` in ``tz`` cannot be scheduled, or ``None`` when it can."""
    try:
        resolve_zone(tz)
        _checked(expr)
    except ValueError as exc:
        return str(exc)
    return None


def next_after(expr: str, tz: str, after: datetime) -> datetime | None:
    """The first instant strictly after ``after`` (aware), in UTC; ``None`` when the expression
    never fires again (``0 0 30 2 *``). ValueError for an expression :func:`cron_error` rejects."""
    from croniter import CroniterBadDateError, croniter

    expanded = _checked(expr)
    zone = resolve_zone(tz)
    once_per_wall_time = not expanded.split(" ")[1].startswith("*")
    iterator = croniter(expanded, after.astimezone(zone))
    try:
        for _ in range(4):  # at most one repeated wall time is skipped in a row
            candidate: datetime = iterator.get_next(datetime)
            if once_per_wall_time and _second_pass(candidate, zone):
                continue
            return candidate.astimezone(UTC)
    except CroniterBadDateError:
        return None
    return None


def _second_pass(moment: datetime, zone: ZoneInfo) -> bool:
    """Whether ``moment`` is the second occurrence of a wall time repeated when clocks went back."""
    wall = moment.astimezone(zone).replace(tzinfo=None)
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    if first.utcoffset() == second.utcoffset():
        return False
    return moment.astimezone(UTC) == second.astimezone(UTC)
