"""``fastagent attach``: the chat's terminal UI on a live session of a serve, over ``/control``.

* :mod:`fastagent_cli.chat.transcript` (shared with chat): durable entries and live events shown
  once each;
* :mod:`.follow`: rounds of subscribe, resync from ``entries(since=)``, follow;
* :mod:`.link`: the endpoint, ``control.json`` re-read after a restart, the reconnect budgets;
* :mod:`.ops`: chat's shared commands (:mod:`fastagent_cli.chat.session_commands`) over ``/control``;
* :mod:`.actions`: what a typed line does;
* :mod:`.side`: attach's side of the one app (:class:`~fastagent_cli.chat.app.SessionApp`, chat's
  too): the follower's screen, the banner, the status line, the detach.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fastagent_cli.chat.app import SessionApp
from fastagent_cli.chat.attach.link import Endpoint, Link
from fastagent_cli.chat.attach.side import AttachSide

__all__ = ["AttachSide", "Endpoint", "Link", "attach"]


async def attach(
    session: str,
    *,
    endpoint: Endpoint | None,
    discover: Callable[[], Endpoint | None] | None,
    history: int | None,
    history_path: Path | None = None,
    source: str = "control.json",
) -> int:
    """Attach to ``session`` at ``endpoint`` (``discover`` reads a local serve's ``control.json``
    (``source``) again after a restart; ``None`` for a remote one). 0 once detached;
    :class:`~fastagent_cli.chat.attach.follow.AttachEnded` (exit 1) when it gives up."""
    side = AttachSide(Link(endpoint, discover, source), session, history=history)
    return await SessionApp(side, history_path=history_path).run()
