"""Remote clients of a serve's session control plane: the same two contracts local code uses.

::

    from fastagent_cli.remote import connect_agent, connect_session_control

    control = await connect_session_control("http://127.0.0.1:8787", token)   # SessionControl
    agent = connect_agent("http://127.0.0.1:8787", token)                     # Agent
    async with control.sessions.get("s1").events() as events:
        await events.ready()
        async for event in agent.invoke("s1", "hello"): ...
    await control.aclose(); await agent.aclose()

The token is the serve's (``FASTAGENT_CONTROL_TOKEN``, or the one ``dev`` / ``start`` write to
``<state root>/control.json``). Deadlines: 10 s for reads and for opening a stream, 60 s for
entries, the session list, actions and writes, and for opening ``/control/invoke``; an event
stream's headers may take up to three heartbeats (90 s: the original sends them with its first
event or ping), and an open stream with no bytes for three heartbeats is a dead connection.
"""

from __future__ import annotations

import dataclasses

import httpx

from fastagent_cli.control import Capabilities
from fastagent_cli.errors import ControlRequestError
from fastagent_cli.remote.agent import RemoteAgent
from fastagent_cli.remote.control import (
    RemoteSession,
    RemoteSessionControl,
    RemoteSessions,
    RemoteSessionsUnavailable,
)
from fastagent_cli.remote.endpoint import (
    HEARTBEAT_S,
    IDLE_BEATS,
    PAYLOAD_TIMEOUT_S,
    REQUEST_FAILED,
    REQUEST_TIMEOUT_S,
    ControlEndpoint,
    control_url,
)
from fastagent_cli.remote.events import RemoteEventStream
from fastagent_cli.remote.routes import DISPATCH, SESSIONS, RouteSet, detect_routes, dispatch_updatable

__all__ = [
    "HEARTBEAT_S",
    "IDLE_BEATS",
    "PAYLOAD_TIMEOUT_S",
    "REQUEST_FAILED",
    "REQUEST_TIMEOUT_S",
    "ControlEndpoint",
    "ControlRequestError",
    "DISPATCH",
    "SESSIONS",
    "RouteSet",
    "RemoteAgent",
    "RemoteEventStream",
    "RemoteSession",
    "RemoteSessionControl",
    "RemoteSessions",
    "RemoteSessionsUnavailable",
    "connect_agent",
    "connect_session_control",
    "control_url",
]


async def connect_session_control(
    url: str,
    token: str,
    *,
    client: httpx.AsyncClient | None = None,
    heartbeat_s: float = HEARTBEAT_S,
    request_timeout_s: float | None = None,
) -> RemoteSessionControl:
    """The hub of the serve at ``url`` (its base URL, e.g. ``http://127.0.0.1:8787``).

    Reads ``/control/capabilities`` once, so a wrong URL or token fails here:
    :class:`~fastagent_cli.errors.ControlRequestError` (``status`` 401 for a wrong token, 404 for a
    serve without ``session_control = true``, ``None`` when unreachable), and finds out which
    route set the serve has (this one's, or the TypeScript original 0.18's: :mod:`.routes`).
    ``client`` sends through your own httpx client (it stays open); ``heartbeat_s`` is the serve's
    ping interval (an event stream's headers may take up to three of them, as the original sends
    them with its first event or ping); ``request_timeout_s`` the deadline of a read
    (:data:`REQUEST_TIMEOUT_S` by default).
    """
    endpoint = ControlEndpoint(
        url, token, client=client, heartbeat_s=heartbeat_s, request_timeout_s=request_timeout_s
    )
    try:
        answer = await endpoint.call("GET", "/control/capabilities")
        if not isinstance(answer, dict):
            raise ValueError("expected an object")
        capabilities = Capabilities.from_json(answer)
        routes = await detect_routes(endpoint, answer)
        if routes.dispatch and "updatable" not in answer:
            capabilities = dataclasses.replace(capabilities, updatable=dispatch_updatable(capabilities))
    except ValueError as exc:
        await endpoint.aclose()
        raise ControlRequestError(
            f"GET /control/capabilities: the answer does not match the session control protocol ({exc})",
            status=200,
            retryable=False,
        ) from None
    except BaseException:
        await endpoint.aclose()
        raise
    return RemoteSessionControl(endpoint, capabilities, routes)


def connect_agent(
    url: str, token: str, *, client: httpx.AsyncClient | None = None, heartbeat_s: float = HEARTBEAT_S
) -> RemoteAgent:
    """An :class:`~fastagent_cli.contract.Agent` whose ``invoke`` drives ``POST /control/invoke``
    on the serve at ``url`` (no IO until the first ``invoke``)."""
    return RemoteAgent(ControlEndpoint(url, token, client=client, heartbeat_s=heartbeat_s))
