"""The schedule claims: the storage seam between the scheduler and where its state lives.

Two things must survive a crash and be decided once:

* **fired slots**: schedule name -> the instant its last run was claimed. A slot is claimed before
  its turn starts, so it fires at most once even when the process dies mid-turn;
* **wake-ups**: the agent's own pending turns (``wake``), claimed one at a time when due.

:class:`ScheduleClaims` is the whole interface. The shipped implementation is files under
``<state root>/schedule/`` (:class:`~fastagent_cli.state.claims_files.FileClaims`); a backend
shared by several instances (PostgreSQL, say) implements the same seven methods, each of which
must be atomic on its own, and plugs in at :func:`open_schedule_claims`. Every method may raise
``OSError`` (or :class:`ClaimsUnavailable`) for a storage fault; callers decide what a fault means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from fastagent_cli.state.clock import format_instant, parse_instant
from fastagent_cli.state.cron import cron_error

__all__ = [
    "ClaimsUnavailable",
    "ScheduleClaims",
    "TooManyWakeups",
    "Wakeup",
    "open_schedule_claims",
]


class ClaimsUnavailable(OSError):
    """The claims cannot be read or written (a storage fault, not a bad entry)."""


@dataclass(frozen=True, slots=True)
class Wakeup:
    """A pending self-scheduled turn. One-shot unless ``cron`` is set (then ``fire_at`` is the
    next occurrence); ``attempts`` counts busy deferrals of a one-shot."""

    id: str
    session: str
    prompt: str
    fire_at: datetime
    cron: str | None = None
    tz: str | None = None
    attempts: int = 0

    @property
    def recurring(self) -> bool:
        return self.cron is not None

    def to_json(self) -> dict[str, Any]:
        """The stored form: ``{id, session, prompt, fireAt, cron?, tz?, attempts?}``."""
        out: dict[str, Any] = {
            "id": self.id,
            "session": self.session,
            "prompt": self.prompt,
            "fireAt": format_instant(self.fire_at),
        }
        if self.cron is not None:
            out["cron"] = self.cron
        if self.tz is not None:
            out["tz"] = self.tz
        if self.attempts:
            out["attempts"] = self.attempts
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Wakeup:
        """Parse a stored entry; ValueError saying what is wrong with a malformed one."""
        if not isinstance(obj, Mapping):
            raise ValueError("not an object")
        for key in ("id", "session", "prompt", "fireAt"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise ValueError(f"{key} is missing or not a non-empty string")
        fire_at = parse_instant(obj["fireAt"])
        cron, tz, attempts = obj.get("cron"), obj.get("tz"), obj.get("attempts", 0)
        if tz is not None and not isinstance(tz, str):
            raise ValueError("tz is not a string")
        if cron is not None:
            if not isinstance(cron, str):
                raise ValueError("cron is not a string")
            problem = cron_error(cron, tz or "UTC")
            if problem:
                raise ValueError(problem)
        if isinstance(attempts, bool) or not isinstance(attempts, int | float) or not math.isfinite(attempts):
            raise ValueError("attempts is not a number")
        return cls(obj["id"], obj["session"], obj["prompt"], fire_at, cron, tz, int(attempts))


@dataclass(slots=True)
class TooManyWakeups(Exception):
    """Raised by :meth:`ScheduleClaims.add_wakeup`: the session already has ``limit`` pending."""

    limit: int
    pending: list[Wakeup] = field(default_factory=list)


class ScheduleClaims(Protocol):
    async def last_fired(self) -> dict[str, datetime]:
        """Every schedule's last claimed instant."""
        ...

    async def claim_slot(self, name: str, at: datetime) -> None:
        """Record durably that ``name`` fired at ``at``, before its turn starts."""
        ...

    async def wakeups(self) -> list[Wakeup]:
        """The pending wake-ups in stored order (malformed entries are left out, with a warning)."""
        ...

    async def add_wakeup(self, wakeup: Wakeup, *, limit: int) -> None:
        """Store ``wakeup`` unless its session already has ``limit`` pending (TooManyWakeups)."""
        ...

    async def remove_wakeup(self, wake_id: str, *, session: str | None = None) -> bool:
        """Remove a pending wake-up (only from ``session`` when given); whether one was removed."""
        ...

    async def take_due_wakeup(self, now: datetime) -> Wakeup | None:
        """Claim the first wake-up due at ``now``: a one-shot is removed, a recurring one advances
        to its next occurrence after ``now`` (removed when there is none). Returns the occurrence
        claimed, or ``None`` when nothing is due."""
        ...

    async def put_wakeup(self, wakeup: Wakeup) -> None:
        """Store a wake-up again as it is (a one-shot deferred because its session was busy)."""
        ...


def open_schedule_claims(state_root: Path) -> ScheduleClaims:
    """The claims of the agent whose state lives in ``state_root``."""
    from fastagent_cli.state.claims_files import FileClaims

    return FileClaims(state_root / "schedule")
