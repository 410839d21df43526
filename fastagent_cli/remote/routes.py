"""Which of the two ``/control`` route sets a serve has, and the requests each one takes.

* ``sessions``: the spec's resource routes, ``/control/sessions/{id}``, ``.../entries``,
  ``.../events``, ``.../actions`` (this serve; the original after 0.18);
* ``dispatch``: the TypeScript original 0.18's, ``/control/state?session=``,
  ``/control/entries?session=&since=``, ``/control/events?session=`` and ``POST
  /control/dispatch {session, command}`` (seven commands, ``set_model``, ``set_thinking`` and
  ``navigate`` among them; no list, fork or delete).

A serve that names its sets in ``capabilities.routes`` (this one: both) is taken at its word; one
that does not is asked ``GET /control/state?session=…`` once when connecting: an answer means the
``dispatch`` set, a 404 the ``sessions`` set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastagent_cli.control import Capabilities
from fastagent_cli.errors import ControlRequestError
from fastagent_cli.remote.endpoint import ControlEndpoint, session_path

__all__ = ["DISPATCH", "PROBE_SESSION", "SESSIONS", "RouteSet", "detect_routes", "dispatch_updatable"]

SESSIONS = "sessions"
DISPATCH = "dispatch"
PROBE_SESSION = "fastagent-route-probe"
"""The session id of the one read that tells the route sets apart (reads never create one)."""


@dataclass(frozen=True, slots=True)
class RouteSet:
    """The requests of one route set (``name``: :data:`SESSIONS` or :data:`DISPATCH`)."""

    name: str

    @property
    def dispatch(self) -> bool:
        return self.name == DISPATCH

    def state(self, session: str) -> tuple[str, dict[str, str] | None]:
        if self.dispatch:
            return "/control/state", {"session": _nonempty(session)}
        return session_path(session), None

    def entries(self, session: str, since: str | None) -> tuple[str, dict[str, str] | None]:
        if self.dispatch:
            params = {"session": _nonempty(session)}
            if since is not None:
                params["since"] = since
            return "/control/entries", params
        return session_path(session, "/entries"), None if since is None else {"since": since}

    def events(self, session: str) -> str:
        if self.dispatch:
            return f"/control/events?session={quote(_nonempty(session), safe='')}"
        return session_path(session, "/events")

    def command(self, session: str, command: Mapping[str, Any]) -> tuple[str, Any]:
        """The path and body of a run action (``steer``, ``follow_up``, ``abort``, ``compact``)
        or, on the dispatch set, any of its seven commands."""
        if self.dispatch:
            return "/control/dispatch", {"session": _nonempty(session), "command": dict(command)}
        return session_path(session, "/actions"), dict(command)


def _nonempty(session: str) -> str:
    if not session:
        raise ValueError("a session id cannot be empty")
    return session


def dispatch_updatable(capabilities: Capabilities) -> tuple[str, ...]:
    """What ``update()`` can set through the dispatch set's commands, by its gates (a 0.18 serve
    sends no ``updatable``)."""
    gates = (
        ("model", capabilities.model_selection is not None),
        ("thinkingLevel", capabilities.thinking_level),
        ("leafEntryId", capabilities.navigate),
    )
    return tuple(field for field, open_ in gates if open_)


async def detect_routes(endpoint: ControlEndpoint, capabilities: Mapping[str, Any]) -> RouteSet:
    """The route set to use with a serve whose capabilities are ``capabilities`` (the spec's
    set when the serve has both)."""
    declared = capabilities.get("routes")
    if isinstance(declared, list):
        if SESSIONS in declared:
            return RouteSet(SESSIONS)
        if DISPATCH in declared:
            return RouteSet(DISPATCH)
    try:
        await endpoint.call("GET", "/control/state", params={"session": PROBE_SESSION})
    except ControlRequestError as exc:
        if exc.status in (404, 405):
            return RouteSet(SESSIONS)
        raise
    return RouteSet(DISPATCH)
