"""How usage totals and what the limits leave are shown: ``fastagent usage`` and ``sessions``."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fastagent_cli.definition.sections import LimitsConfig
from fastagent_cli.errors import UsageError
from fastagent_cli.state.usage import UsageTotals, day_start_ms, format_cost, format_tokens

__all__ = [
    "LimitLeft",
    "format_cost",
    "format_tokens",
    "limits_left",
    "ordered",
    "parse_since",
    "since_label",
    "summary",
    "table_lines",
    "today_start",
]

_SPAN = re.compile(r"(\d+)\s*([mhdw])", re.IGNORECASE)
_UNITS = {"m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}


def parse_since(value: str, now_ms: int) -> int:
    """``7d`` / ``24h`` / ``30m`` / ``2w`` back from now, or a UTC date ``2026-12-01`` (or ISO
    time); UsageError otherwise."""
    text = value.strip()
    span = _SPAN.fullmatch(text)
    if span:
        return now_ms - int(span.group(1)) * _UNITS[span.group(2).lower()] * 1000
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--since {value!r}: use a span back from now (30m, 24h, 7d, 2w) or a date (2026-12-01)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def summary(totals: UsageTotals) -> str:
    """``3 requests · 1.2k in · 340 out · 2.0k cached · $0.0042``."""
    parts = [f"{totals.requests} request{'s' if totals.requests != 1 else ''}"]
    parts.append(f"{format_tokens(totals.input)} in")
    parts.append(f"{format_tokens(totals.output)} out")
    cached = totals.cache_read + totals.cache_write
    if cached:
        parts.append(f"{format_tokens(cached)} cached")
    parts.append(format_cost(totals.cost))
    return " · ".join(parts)


def table_lines(label: str, groups: Mapping[str, UsageTotals], total: UsageTotals) -> list[str]:
    rows = [(label.upper(), "REQUESTS", "INPUT", "OUTPUT", "CACHED", "COST")]
    for key, sums in groups.items():
        rows.append(_row(key, sums))
    rows.append(_row("total", total))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    out = []
    for i, row in enumerate(rows):
        if i == len(rows) - 1:
            out.append("")
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        out.append("  ".join(cells).rstrip())
    return out


def _row(key: str, sums: UsageTotals) -> tuple[str, str, str, str, str, str]:
    cached = sums.cache_read + sums.cache_write
    return (
        key,
        str(sums.requests),
        format_tokens(sums.input),
        format_tokens(sums.output),
        format_tokens(cached),
        format_cost(sums.cost),
    )


@dataclass(frozen=True, slots=True)
class LimitLeft:
    limit: str
    value: float
    window: str
    used: float | None
    """What the window has used (``None``: it depends on the turn or the session)."""

    @property
    def cost(self) -> bool:
        return self.limit.startswith("max_cost")

    @property
    def left(self) -> float | None:
        return None if self.used is None else max(0.0, self.value - self.used)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"limit": self.limit, "value": self.value, "window": self.window}
        if self.used is not None:
            out["used"] = round(self.used, 10) if self.cost else int(self.used)
            out["left"] = round(self.left or 0.0, 10) if self.cost else int(self.left or 0)
        return out

    def line(self) -> str:
        shown = format_cost if self.cost else (lambda v: f"{format_tokens(int(v))} tokens")
        head = f"{self.limit} = {shown(self.value)}"
        if self.used is None:
            where = "each turn" if self.window == "turn" else "each session (--session ID shows one's)"
            return f"{head}: applies to {where}"
        window = "today (UTC)" if self.window == "day" else "this session"
        return f"{head}: {shown(self.used)} used {window}, {shown(self.left or 0.0)} left"


def limits_left(limits: LimitsConfig, today: UsageTotals, session: UsageTotals | None) -> list[LimitLeft]:
    """Each limit set, with what its window has used where that is one number."""
    out: list[LimitLeft] = []
    for window in ("turn", "session", "day"):
        for kind in ("cost", "tokens"):
            name = f"max_{kind}_per_{window}"
            value = getattr(limits, name)
            if value is None:
                continue
            sums = today if window == "day" else session if window == "session" else None
            used: float | None = None
            if sums is not None:
                used = sums.cost if kind == "cost" else float(sums.tokens)
            out.append(LimitLeft(name, float(value), window, used))
    return out


def today_start(now_ms: int | None = None) -> int:
    return day_start_ms(int(time.time() * 1000) if now_ms is None else now_ms)


def since_label(since_ms: int | None) -> str | None:
    if since_ms is None:
        return None
    return datetime.fromtimestamp(since_ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def ordered(groups: Mapping[str, UsageTotals], by: str) -> dict[str, UsageTotals]:
    """Days oldest first; sessions and models by cost, then tokens, largest first."""
    if by == "day":
        return dict(sorted(groups.items()))
    ranked: Sequence[tuple[str, UsageTotals]] = sorted(
        groups.items(), key=lambda kv: (-kv[1].cost, -kv[1].tokens, kv[0])
    )
    return dict(ranked)
