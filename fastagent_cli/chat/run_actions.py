"""What chat and ``attach`` send to a session's run, one way for both: through the session's
:class:`~fastagent_cli.control.Session` (chat: the local hub, ``opened.control``; attach: the
remote one over ``/control``).

* :func:`send_to_run`: a line typed under a running answer, as a steer (Enter) or a follow-up
  (Alt+Enter); a run that ended before it took the text makes it the next run's prompt;
* :func:`abort_run`: ``/abort``, and the line that says how it went.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastagent_cli.chat.composer import ActionKind
from fastagent_cli.contract import Prompt
from fastagent_cli.control import NO_ACTIVE_RUN, RUN_COMMAND_FAILED, Session

__all__ = ["Sent", "abort_run", "send_to_run"]


@dataclass(frozen=True, slots=True)
class Sent:
    """How a steer or follow-up went: taken, ``late`` (the run ended first: send the text as the
    next prompt), or ``refused`` (the session's message)."""

    late: bool = False
    refused: str | None = None


async def send_to_run(session: Session, text: Prompt | str, kind: ActionKind) -> Sent:
    prompt = text if isinstance(text, Prompt) else Prompt(text)
    result = await (session.follow_up(prompt) if kind == "follow_up" else session.steer(prompt))
    if result.ok or result.error is None:
        return Sent()
    if result.error.code in (NO_ACTIVE_RUN, RUN_COMMAND_FAILED):
        return Sent(late=True)
    return Sent(refused=result.error.message)


async def abort_run(session: Session) -> tuple[str, str]:
    """Abort the session's active run; the line to show and its style."""
    result = await session.abort()
    if result.ok or result.error is None:
        return "⏹ abort sent", "yellow"
    if result.error.code == NO_ACTIVE_RUN:
        return "nothing is running", "cyan"
    return f"✗ could not abort: {result.error.message}", "red"
