"""What a session-control call answers: accepted, or rejected with a stable code.

Acceptance is not outcome: ``ok`` means the call was admitted (a steer queued, an abort delivered,
a compaction started); how the run or the compaction ends arrives later as an event
(``run_settled``, ``compaction_finished``). ``ok: false`` means the call did not complete;
``retryable`` says whether the *same* call may succeed later. Every code except
:data:`PARTIAL_UPDATE` is a rejection before anything durable landed.

Wire form (HTTP 200 either way): ``{"ok": true, "runId"?: str}`` or
``{"ok": false, "error": {"code", "message", "retryable"}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BOUNDARY_COMMAND_FAILED",
    "INVALID_COMMAND",
    "NOTHING_TO_COMPACT",
    "NO_ACTIVE_RUN",
    "NO_SUCH_SESSION",
    "PARTIAL_UPDATE",
    "RETRYABLE",
    "RUN_COMMAND_FAILED",
    "SESSIONS_UNAVAILABLE",
    "SESSION_BUSY",
    "UNSUPPORTED_CAPABILITY",
    "ActionResult",
    "ControlError",
    "SessionsUnavailable",
    "accepted",
    "rejected",
]

NO_ACTIVE_RUN = "no_active_run"
"""steer / follow_up / abort on a session with no run (and, for abort, no manual compaction)."""
RUN_COMMAND_FAILED = "run_command_failed"
"""The action reached a run that was already settling: it could not take effect."""
UNSUPPORTED_CAPABILITY = "unsupported_capability"
"""A call, or an update field, this deployment does not offer (see ``capabilities()``)."""
INVALID_COMMAND = "invalid_command"
"""A payload this runtime cannot accept: malformed, a wrong type, an unknown model or entry."""
NO_SUCH_SESSION = "no_such_session"
"""A write to a session that does not exist (sessions are created by invoke or fork)."""
BOUNDARY_COMMAND_FAILED = "boundary_command_failed"
"""A write failed before anything durable landed (an unreadable record, a failing disk)."""
NOTHING_TO_COMPACT = "nothing_to_compact"
"""``compact`` on a session with no compactable history yet (or one compacted just now)."""
SESSION_BUSY = "session_busy"
"""A write while a run (or another write) holds the session."""
PARTIAL_UPDATE = "partial_update"
"""An update wrote some of its fields, then failed: the message names what landed."""
SESSIONS_UNAVAILABLE = "sessions_unavailable"
"""The session list cannot be read (HTTP 503 on the wire)."""

RETRYABLE: Mapping[str, bool] = {
    NO_ACTIVE_RUN: False,
    RUN_COMMAND_FAILED: False,
    UNSUPPORTED_CAPABILITY: False,
    INVALID_COMMAND: False,
    NO_SUCH_SESSION: False,
    BOUNDARY_COMMAND_FAILED: True,
    NOTHING_TO_COMPACT: False,
    SESSION_BUSY: True,
    PARTIAL_UPDATE: False,
    SESSIONS_UNAVAILABLE: True,
}
"""Each code's ``retryable`` flag, the same locally and over the wire."""


@dataclass(frozen=True, slots=True)
class ControlError:
    code: str
    message: str
    retryable: bool

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "retryable": self.retryable}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ControlError:
        code, message, retryable = obj.get("code"), obj.get("message"), obj.get("retryable")
        if not isinstance(code, str) or not isinstance(message, str) or not isinstance(retryable, bool):
            raise ValueError("an error needs a string code and message and a boolean retryable")
        return cls(code, message, retryable)


@dataclass(frozen=True, slots=True)
class ActionResult:
    """``ok`` with the run it joined (``run_id``), or the :class:`ControlError` that refused it."""

    ok: bool
    run_id: str | None = None
    error: ControlError | None = None

    def to_json(self) -> dict[str, Any]:
        if self.ok:
            return {"ok": True} if self.run_id is None else {"ok": True, "runId": self.run_id}
        assert self.error is not None
        return {"ok": False, "error": self.error.to_json()}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ActionResult:
        ok = obj.get("ok")
        if ok is True:
            run_id = obj.get("runId")
            if run_id is not None and not isinstance(run_id, str):
                raise ValueError("runId must be a string")
            return cls(True, run_id)
        error = obj.get("error")
        if ok is not False or not isinstance(error, Mapping):
            raise ValueError('a result is {"ok": true} or {"ok": false, "error": {...}}')
        return cls(False, error=ControlError.from_json(error))

    @property
    def code(self) -> str | None:
        return None if self.error is None else self.error.code


def accepted(run_id: str | None = None) -> ActionResult:
    return ActionResult(True, run_id)


def rejected(code: str, message: str, retryable: bool | None = None) -> ActionResult:
    """A refusal with ``code``'s documented ``retryable`` flag unless one is given."""
    flag = RETRYABLE.get(code, False) if retryable is None else retryable
    return ActionResult(False, error=ControlError(code, message, flag))


class SessionsUnavailable(Exception):
    """``sessions.list()`` cannot read the store: the one read that rejects with a code
    (:data:`SESSIONS_UNAVAILABLE`, retryable). ``[]`` means "no sessions", never "could not look"."""

    code = SESSIONS_UNAVAILABLE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
