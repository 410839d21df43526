"""The schedule claims: the storage seam between the scheduler and where its state lives.

Two things must survive a crash and be decided once:

* **fired slots**: schedule name -> the instant its last run was claimed. A slot is claimed before
  its turn starts, so it fires at most once even when the process dies mid-turn;
* **wake-ups**: the agent's own pending turns (``wake``), claimed one at a time when due.

:class:`ScheduleClaims` is the whole interface. The shipped implementation is files under
``<state root>/schedule/`` (:class:`~fastagent_cli.state.claims_files.FileClaims`); the one
several instances share is :class:`~fastagent_cli.state.pg.claims.PgClaims` (a slot claimed in
one transaction, so it fires once across all of them), which assembly's state backend opens
instead. Each of the seven methods is atomic on its own. Every method may raise
``OSError`` (or :class:`ClaimsUnavailable`) for a storage fault; callers decide what a fault means.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Protocol

from fastagent_cli.state.claims_files import FileClaims
from fastagent_cli.state.wakeup import ClaimsUnavailable, TooManyWakeups, Wakeup

__all__ = [
    "ClaimsUnavailable",
    "ScheduleClaims",
    "TooManyWakeups",
    "Wakeup",
    "open_schedule_claims",
]


class ScheduleClaims(Protocol):
    async def last_fired(self) -> dict[str, datetime]:
        """Every schedule's last claimed instant."""
        ...

    async def claim_slot(self, name: str, slot: datetime, at: datetime) -> bool:
        """Claim ``name``'s slot ``slot`` (the cron instant it is for), recording durably that it
        fired at ``at``, before its turn starts. ``False`` when the slot is claimed already (by
        another instance sharing these claims): its turn must not run here."""
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
    return FileClaims(state_root / "schedule")
