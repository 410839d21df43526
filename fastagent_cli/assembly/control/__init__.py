"""The local session hub (:class:`LocalSessionControl`), built over an engine.

:func:`session_control` builds it for an agent made with :func:`~fastagent_cli.assembly.create_agent`
(no definition: no commands); :class:`~fastagent_cli.assembly.OpenedAgent` builds its own
(``opened.control``: the definition's skills as commands, writes when ``session_control = true``).
"""

from __future__ import annotations

from fastagent_cli.assembly.control.hub import CommandSource, LocalSession, LocalSessionControl, LocalSessions
from fastagent_cli.assembly.control.owner import SessionOwner, SessionView
from fastagent_cli.engine.agent import EngineAgent

__all__ = [
    "CommandSource",
    "LocalSession",
    "LocalSessionControl",
    "LocalSessions",
    "SessionOwner",
    "SessionView",
    "session_control",
]


def session_control(
    agent: EngineAgent, *, commands: CommandSource | None = None, writes: bool = True
) -> LocalSessionControl:
    """The hub of ``agent`` (steer, follow-up, abort and watch its runs; read, update, fork,
    compact and delete its sessions)."""
    return LocalSessionControl(agent, commands=commands, writes=writes)
