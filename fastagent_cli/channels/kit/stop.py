"""The chat stop command (feature H28): abort the session's *active* run, never a queued turn.

A stop message is a control action, not a turn: it never queues behind the run it stops. It goes
through the session hub a channel receives as ``ctx.control``
(:class:`~fastagent_cli.control.SessionControl`), as the ``/control`` wire's ``{"type": "abort"}``
action; queued turns of the session keep their place and run next. A channel mounted without a
hub answers :data:`STOP_UNAVAILABLE` instead of ignoring the command.
"""

from __future__ import annotations

import logging
import re

from fastagent_cli.control import NO_ACTIVE_RUN, SessionControl, dispatch
from fastagent_cli.errors import one_line

__all__ = [
    "NOTHING_RUNNING",
    "STOPPED",
    "STOP_UNAVAILABLE",
    "dispatch_stop",
    "is_stop_text",
]

log = logging.getLogger("fastagent.channel")

STOPPED = "⏹ Stopped."
NOTHING_RUNNING = "Nothing is running."
STOP_UNAVAILABLE = "⚠️ Stop isn't enabled on this deployment (set session_control = true in fastagent.toml)."
_STOP_WORD = re.compile(r"^(stop|cancel)[.!]?$", re.IGNORECASE)


def is_stop_text(text: str) -> bool:
    """A whole-message ``stop`` / ``cancel`` (optionally ending in ``.`` or ``!``): Slack, Feishu."""
    return bool(_STOP_WORD.match(text.strip()))


async def dispatch_stop(control: SessionControl | None, session: str, label: str) -> str:
    """Abort the active run of ``session`` and say what happened, in the chat's words. Never raises;
    the details of a failure go to the log."""
    if control is None:
        return STOP_UNAVAILABLE
    try:
        result = await dispatch(control, session, {"type": "abort"})
    except Exception as exc:
        log.warning("%s stop failed for session %s: %s", label, session, one_line(str(exc), 300))
        return "⚠️ Could not stop — see the server logs."
    if result.get("ok") is True:
        log.info("%s stop: the active run of session %s was aborted", label, session)
        return STOPPED
    error = result.get("error") or {}
    code = str(error.get("code") or "unknown")
    if code == NO_ACTIVE_RUN:
        return NOTHING_RUNNING
    log.warning("%s stop rejected for session %s: %s %s", label, session, code, error.get("message", ""))
    return f"⚠️ Could not stop ({code})."
