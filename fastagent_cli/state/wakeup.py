"""The records the schedule claims hold and the errors they raise (see :mod:`.claims`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fastagent_cli.state.clock import format_instant, parse_instant
from fastagent_cli.state.cron import cron_error

__all__ = ["ClaimsUnavailable", "TooManyWakeups", "Wakeup"]


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
