"""The chat stop command (feature H28): abort the session's *active* run, never a queued turn.

A stop message is a control action, not a turn: it never queues behind the run it stops. It is
carried by the session hub a channel receives as ``ctx.control`` when session control is served;
without one the command answers :data:`STOP_UNAVAILABLE` instead of being ignored. The hub speaks
the ``/control`` dispatch shape: ``await control.dispatch(session, {"type": "abort"})`` returns
``{"ok": true}`` or ``{"ok": false, "error": {"code", "message"}}``.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Mapping
from typing import Any, Protocol

from fastagent_cli.errors import one_line

__all__ = [
    "NOTHING_RUNNING",
    "STOPPED",
    "STOP_UNAVAILABLE",
    "StopControl",
    "dispatch_stop",
    "is_stop_text",
]

log = logging.getLogger("fastagent.channel")

STOPPED = "⏹ Stopped."
NOTHING_RUNNING = "Nothing is running."
STOP_UNAVAILABLE = "⚠️ Stop isn't enabled on this deployment (set session_control = true in fastagent.toml)."
NO_ACTIVE_RUN_CODE = "no_active_run"
_STOP_WORD = re.compile(r"^(stop|cancel)[.!]?$", re.IGNORECASE)


class StopControl(Protocol):
    """The part of the session hub a stop command needs."""

    def dispatch(self, session: str, command: Mapping[str, Any]) -> Any: ...


def is_stop_text(text: str) -> bool:
    """A whole-message ``stop`` / ``cancel`` (optionally ending in ``.`` or ``!``): Slack, Feishu."""
    return bool(_STOP_WORD.match(text.strip()))


async def dispatch_stop(control: StopControl | None, session: str, label: str) -> str:
    """Abort the active run of ``session`` and say what happened, in the chat's words. Never raises;
    the details of a failure go to the log."""
    if control is None:
        return STOP_UNAVAILABLE
    try:
        result = control.dispatch(session, {"type": "abort"})
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        log.warning("%s stop failed for session %s: %s", label, session, one_line(str(exc), 300))
        return "⚠️ Could not stop — see the server logs."
    if isinstance(result, Mapping) and result.get("ok") is True:
        return STOPPED
    error = result.get("error") if isinstance(result, Mapping) else None
    code = str(error.get("code")) if isinstance(error, Mapping) else "unknown"
    if code == NO_ACTIVE_RUN_CODE:
        return NOTHING_RUNNING
    message = error.get("message", "") if isinstance(error, Mapping) else ""
    log.warning("%s stop rejected for session %s: %s %s", label, session, code, message)
    return f"⚠️ Could not stop ({code})."
