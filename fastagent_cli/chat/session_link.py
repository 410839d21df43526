"""The one way chat and ``attach`` reach the session they show: a :class:`SessionLink` holds the
session hub (:class:`~fastagent_cli.control.SessionControl`: state, entries, live events, steer,
abort, approvals, settings) and the agent whose ``invoke`` starts a run.

* :class:`LocalLink`: chat's, in process (``opened.control``, the session owner's hub, and
  ``opened.agent``);
* :class:`~fastagent_cli.chat.attach.link.Link`: attach's, over ``/control`` (a
  :class:`~fastagent_cli.remote.RemoteSessionControl` and ``POST /control/invoke``), with its
  reconnects; either side is ``None`` while it is not connected.
"""

from __future__ import annotations

from typing import Protocol

from fastagent_cli.assembly import OpenedAgent
from fastagent_cli.contract import Agent
from fastagent_cli.control import SessionControl

__all__ = ["LocalLink", "SessionLink"]


class SessionLink(Protocol):
    @property
    def agent(self) -> Agent | None: ...

    @property
    def control(self) -> SessionControl | None: ...


class LocalLink:
    """The in-process link of an opened agent (always connected)."""

    def __init__(self, opened: OpenedAgent) -> None:
        self._opened = opened

    @property
    def agent(self) -> Agent:
        return self._opened.agent

    @property
    def control(self) -> SessionControl:
        return self._opened.control
