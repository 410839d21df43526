"""``wake`` and ``unwake``: the agent schedules its own later turns (``self_schedule = true``).

``wake({in, prompt})`` records a one-shot wake-up and ``wake({cron, tz?, prompt})`` a recurring
one; when it comes due, the scheduler runs a turn in the same session with ``prompt``, tagged so
the model can tell its own alarm from the user. ``unwake({id})`` cancels one of this
conversation's wake-ups. Both answer in plain text the model can act on, guardrails included:

* ``in`` is a number of seconds or a string with a unit (``"90s"``, ``"30m"``, ``"2h"``,
  ``"1d"``); a bare numeral string (``"120"``) is refused as ambiguous;
* a one-shot is at least :data:`MIN_WAKE_S` ahead; a recurring wake fires at most every
  :data:`MIN_RECURRING_GAP_S`; a session holds at most :data:`MAX_PENDING_WAKEUPS`;
* outside a conversation (no session) nothing is recorded.

They are mounted as a pair, only on the serving path: an agent tool named ``wake`` or ``unwake``
replaces both (:func:`with_wake_tools`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fastagent_cli.state.claims import ScheduleClaims, TooManyWakeups, Wakeup
from fastagent_cli.state.clock import Clock, format_instant
from fastagent_cli.state.cron import cron_error, next_after
from fastagent_cli.tools.base import Tool, ToolContext, ToolResult, text_result
from fastagent_cli.tools.define import define_tool

__all__ = [
    "MAX_PENDING_WAKEUPS",
    "MIN_RECURRING_GAP_S",
    "MIN_WAKE_S",
    "UNWAKE",
    "WAKE",
    "make_wake_tools",
    "parse_delay",
    "with_wake_tools",
]

WAKE = "wake"
UNWAKE = "unwake"
MIN_WAKE_S = 60
MAX_PENDING_WAKEUPS = 20
MIN_RECURRING_GAP_S = 10 * 60
MAX_DELAY_DAYS = 3650
_GAP_SAMPLES = 24
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PREVIEW = 60

WAKE_DESCRIPTION = (
    "Schedule yourself to wake up later and continue THIS conversation. ONE-SHOT: pass `in`, a "
    'duration with a unit ("30m", "2h", "1d") or a number of seconds. RECURRING: pass `cron` (5 '
    "fields, optional IANA `tz`, default UTC) to wake repeatedly; use it sparingly and `unwake` it "
    "when the job is done. Exactly one of `in` / `cron`. When the time comes, a new turn runs in "
    "this session with `prompt` as its instruction, tagged with the wake-up's id so you can tell "
    "it from a user message, and you keep this conversation's context. The woken turn's reply is "
    "NOT delivered to anyone: to reach the user it must call a delivery tool (a channel's send "
    "tool), exactly as a scheduled job would."
)
UNWAKE_DESCRIPTION = (
    "Cancel one of YOUR pending wake-ups (one-shot or recurring) by the id `wake` returned. Use it "
    "when a follow-up is no longer needed, and to stop a recurring wake once its job is done."
)
_WAKE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "in": {
            "anyOf": [{"type": "string"}, {"type": "number"}],
            "description": (
                'one-shot delay: a duration with a unit ("30m", "2h", "1d") or a number of seconds'
            ),
        },
        "cron": {"type": "string", "description": 'recurring: a 5-field cron expression, e.g. "0 9 * * *"'},
        "tz": {"type": "string", "description": 'IANA time zone for `cron` (default "UTC")'},
        "prompt": {
            "type": "string",
            "minLength": 1,
            "description": "the instruction for the woken turn (it runs in this same conversation)",
        },
    },
    "required": ["prompt"],
    "additionalProperties": False,
}


class WakeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    delay: str | float | None = Field(default=None, alias="in")
    cron: str | None = None
    tz: str | None = None
    prompt: str = Field(min_length=1)

    @field_validator("delay", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError('must be a duration like "30m" or a number of seconds')
        return value


def parse_delay(value: str | float) -> float | None:
    """Seconds for ``in``, or ``None`` when it is not a positive number / a number with a unit."""
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) and value > 0 else None
    found = _DELAY.match(value)
    if not found:
        return None
    seconds = float(found.group(1)) * _UNIT_S[found.group(2).lower()]
    return seconds if seconds > 0 else None


def _preview(prompt: str) -> str:
    return prompt if len(prompt) <= _PREVIEW else prompt[:_PREVIEW] + "…"


def _session_of(ctx: ToolContext) -> str | None:
    return ctx.session.get_session_id() if ctx.session is not None else None


def _recurring_problem(cron: str, tz: str, now: datetime) -> tuple[datetime | None, str | None]:
    """``(first instant, refusal)`` for a recurring wake."""
    problem = cron_error(cron, tz)
    if problem:
        return None, f"invalid cron/tz: {problem}"
    instants: list[datetime] = []
    cursor: datetime | None = now
    while cursor is not None and len(instants) < _GAP_SAMPLES:
        cursor = next_after(cron, tz, cursor)
        if cursor is not None:
            instants.append(cursor)
    if len(instants) < 2:
        return None, "this cron never fires (or fires only once) — use `in` for a one-shot."
    gap = min((b - a).total_seconds() for a, b in zip(instants, instants[1:], strict=False))
    if gap < MIN_RECURRING_GAP_S:
        minutes = MIN_RECURRING_GAP_S // 60
        return None, f"too frequent — a recurring wake must fire at most every {minutes} minutes."
    return instants[0], None


def _too_many(error: TooManyWakeups) -> str:
    def line(w: Wakeup) -> str:
        kind = f' (recurring "{w.cron}")' if w.cron else ""
        return f"{w.id}{kind} at {format_instant(w.fire_at)}: {_preview(w.prompt)}"

    pending = "; ".join(line(w) for w in error.pending)
    return (
        f"too many pending wake-ups for this conversation ({error.limit}) — wait for some to fire, "
        f"or unwake one. Pending: {pending}"
    )


def make_wake_tools(claims: ScheduleClaims, clock: Clock) -> list[Tool]:
    """The ``wake`` / ``unwake`` pair over ``claims``, reading time from ``clock``."""

    async def wake(args: WakeArgs, ctx: ToolContext) -> str | ToolResult:
        session = _session_of(ctx)
        if not session:
            return "wake is only available inside a conversation (there is no session to resume)."
        if (args.delay is None) == (args.cron is None):
            return "pass exactly one of `in` (one-shot) or `cron` (recurring)."
        now = clock.now()
        if args.cron is not None:
            tz = (args.tz or "UTC").strip()
            first, problem = _recurring_problem(args.cron, tz, now)
            if problem or first is None:
                return problem or "this cron never fires."
            wakeup = Wakeup(str(uuid.uuid4()), session, args.prompt, first, args.cron.strip(), args.tz)
        else:
            assert args.delay is not None
            seconds = parse_delay(args.delay)
            if seconds is None:
                shown = json.dumps(args.delay)
                return (
                    f'couldn\'t parse "in" ({shown}) — use a unit like "30m" / "2h" / "1d", or a number of '
                    'seconds (a bare number as text like "120" is rejected).'
                )
            if seconds < MIN_WAKE_S:
                return f"too soon — the minimum wake delay is {MIN_WAKE_S}s."
            if seconds > MAX_DELAY_DAYS * 86400:
                return f"too far — a wake-up can be at most {MAX_DELAY_DAYS} days ahead."
            wakeup = Wakeup(str(uuid.uuid4()), session, args.prompt, now + timedelta(seconds=seconds))
        try:
            await claims.add_wakeup(wakeup, limit=MAX_PENDING_WAKEUPS)
        except TooManyWakeups as exc:
            return _too_many(exc)
        except OSError as exc:
            return text_result(f"could not record the wake-up: {exc}", is_error=True)
        at = format_instant(wakeup.fire_at)
        if wakeup.cron is not None:
            zone = f" {wakeup.tz}" if wakeup.tz else ""
            return (
                f'OK — recurring wake {wakeup.id} (cron "{wakeup.cron}"{zone}), first at {at}: '
                f'{args.prompt}. Use unwake({{ id: "{wakeup.id}" }}) to stop it.'
            )
        return (
            f"OK — I'll wake up at {at} (id {wakeup.id}) to: {args.prompt}. "
            f'Use unwake({{ id: "{wakeup.id}" }}) if it becomes unnecessary.'
        )

    async def unwake(
        id: Annotated[str, Field(min_length=1, description="the wake-up id `wake` returned")],
        ctx: ToolContext,
    ) -> str | ToolResult:
        session = _session_of(ctx)
        if not session:
            return "unwake is only available inside a conversation."
        try:
            removed = await claims.remove_wakeup(id, session=session)
        except OSError as exc:
            return text_result(f"could not cancel the wake-up: {exc}", is_error=True)
        if removed:
            return f"OK — wake-up {id} cancelled."
        return f"no pending wake-up {id} in this conversation (already fired, or not yours)."

    wake_tool = define_tool(wake, name=WAKE, description=WAKE_DESCRIPTION)
    unwake_tool = define_tool(unwake, name=UNWAKE, description=UNWAKE_DESCRIPTION)
    return [
        dataclasses.replace(wake_tool, parameters=_WAKE_SCHEMA, source="builtin wake"),
        dataclasses.replace(unwake_tool, source="builtin wake"),
    ]


def with_wake_tools(
    tools: Sequence[Tool], claims: ScheduleClaims, clock: Clock
) -> tuple[list[Tool], list[str]]:
    """``tools`` plus ``wake`` / ``unwake``, unless an agent tool already has either name (then
    neither is mounted, and the warning says which tool replaces them)."""
    authored = [t for t in tools if t.name in (WAKE, UNWAKE)]
    if authored:
        which = ", ".join(f'"{t.name}" ({t.source})' for t in authored)
        return list(tools), [
            f"the agent's own {which} replaces the built-in wake and unwake (they are mounted as a pair)"
        ]
    return [*tools, *make_wake_tools(claims, clock)], []
