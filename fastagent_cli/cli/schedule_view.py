"""``fastagent schedule list`` as a table: a header, the next run in the schedule's own zone
(``2026-12-03 08:30 CET``) and how far off it is (``in 3 min``).

A schedule's zone is its ``tz`` (default UTC); a cron wake-up's is its ``tz``; a one-shot wake-up
is shown in UTC. ``--json`` keeps the ISO instants.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastagent_cli.state.clock import parse_instant

__all__ = ["HEADER", "list_rows", "relative", "table"]

HEADER = ("KIND", "NAME", "NEXT", "IN", "WHEN")
_PROMPT_PREVIEW = 60


def relative(moment: datetime, now: datetime) -> str:
    """``in 45 s``, ``in 3 min``, ``in 2 h 5 min``, ``in 3 d 4 h``; ``3 min ago`` when overdue."""
    seconds = round((moment - now).total_seconds())
    ahead, left = seconds >= 0, abs(seconds)
    if left < 60:
        text = f"{left} s"
    elif left < 3600:
        text = f"{left // 60} min"
    elif left < 86400:
        hours, minutes = divmod(left // 60, 60)
        text = f"{hours} h {minutes} min" if minutes else f"{hours} h"
    else:
        days, hours = divmod(left // 3600, 24)
        text = f"{days} d {hours} h" if hours else f"{days} d"
    return f"in {text}" if ahead else f"{text} ago"


def _local(instant: str | None, tz: str | None) -> tuple[datetime | None, str]:
    if instant is None:
        return None, "(never)"
    try:
        moment = parse_instant(instant)
    except ValueError:
        return None, instant
    try:
        zone = ZoneInfo(tz or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    return moment, moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def _zone(tz: str | None) -> str:
    return f" {tz}" if tz and tz != "UTC" else ""


def list_rows(doc: dict[str, Any], now: datetime) -> list[tuple[str, str, str, str, str]]:
    """One row per schedule, then per pending wake-up, as :data:`HEADER` names the columns."""
    rows = []
    for s in doc["schedules"]:
        moment, shown = _local(s["next"], s["tz"])
        soon = relative(moment, now) if moment is not None else ""
        rows.append(("schedule", s["name"], shown, soon, f"cron {s['cron']}{_zone(s['tz'])}"))
    for w in doc["wakeups"]:
        tz = w.get("tz") if "cron" in w else None
        moment, shown = _local(w["fireAt"], tz)
        kind = f"cron {w['cron']}{_zone(tz)}" if "cron" in w else "one-shot"
        prompt = " ".join(w["prompt"].split())[:_PROMPT_PREVIEW]
        soon = relative(moment, now) if moment is not None else ""
        rows.append(("wake", w["id"], shown, soon, f"{kind}  session={w['session']}  {prompt}"))
    return rows


def table(rows: list[tuple[str, str, str, str, str]]) -> list[str]:
    """The header and the rows, columns padded to their widest cell (nothing when no rows)."""
    if not rows:
        return []
    every = [HEADER, *rows]
    widths = [max(len(row[i]) for row in every) for i in range(len(HEADER) - 1)]
    return [
        "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
        for row in every
    ]
