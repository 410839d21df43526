"""The remote session hub: :class:`~fastagent_cli.control.SessionControl` over ``/control``.

Callers hold the same interface as with the local hub (``opened.control``) and get the same
values and codes. What only a network adds:

* a read that gets no usable answer raises :class:`~fastagent_cli.errors.ControlRequestError`
  (``status`` is the HTTP status, ``None`` when none arrived; ``code`` when the plane sent one);
  ``sessions.list()`` raises :class:`RemoteSessionsUnavailable` for the plane's 503, which is both
  a ``SessionsUnavailable`` (as locally) and a ``ControlRequestError``;
* an acting call never raises: a request that failed answers ``ok: false`` with the client-side
  code :data:`REQUEST_FAILED` (``retryable`` for no answer, 429 and 5xx). A call that timed out
  may still have been applied (an accepted steer whose answer was lost): read ``state()`` first;
* ``events()`` raises :class:`~fastagent_cli.control.SessionEventsClosed` on a ``seq`` gap, a
  failed or dead connection, or a stream the server ended (see :mod:`.events`).

It speaks either route set (:mod:`.routes`): against the original 0.18's, ``update()`` becomes its
``set_model`` / ``set_thinking`` / ``navigate`` commands (a name cannot be set there), and the
list, ``fork()`` and ``delete()``, which that set lacks, are refused as ``unsupported_capability``
(the list raises :class:`RemoteSessionsUnavailable`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

from fastagent_cli.contract import Prompt
from fastagent_cli.control import (
    PARTIAL_UPDATE,
    SESSIONS_UNAVAILABLE,
    UNSUPPORTED_CAPABILITY,
    Action,
    ActionResult,
    AgentCommand,
    Capabilities,
    SessionEntries,
    SessionListing,
    SessionState,
    SessionsUnavailable,
    SessionUpdate,
    rejected,
)
from fastagent_cli.control.approvals import Decision
from fastagent_cli.errors import ControlRequestError
from fastagent_cli.remote.endpoint import REQUEST_FAILED, ControlEndpoint, session_path
from fastagent_cli.remote.events import RemoteEventStream
from fastagent_cli.remote.routes import SESSIONS, RouteSet

__all__ = [
    "REQUEST_FAILED",
    "RemoteSession",
    "RemoteSessionControl",
    "RemoteSessions",
    "RemoteSessionsUnavailable",
]

T = TypeVar("T")
_NO_ROUTE = "{what} is not served by this serve's route set (FastAgent 0.18's /control/dispatch)"


class RemoteSessionsUnavailable(ControlRequestError, SessionsUnavailable):  # type: ignore[misc]
    """The plane answered ``503 sessions_unavailable``: the store cannot be listed (catch it as
    either base; ``code`` is always ``sessions_unavailable`` here, so the bases' types agree)."""


def _parse(what: str, build: Callable[[Any], T], value: Any) -> T:
    try:
        return build(value)
    except (ValueError, TypeError, AttributeError) as exc:
        raise ControlRequestError(
            f"{what}: the answer does not match the session control protocol ({exc})",
            status=200,
            retryable=False,
        ) from None


def _object(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError("expected an object")
    return value


def _array(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError("expected an array")
    return value


class RemoteSession:
    """One session, bound by id (no IO until a method is called)."""

    def __init__(self, endpoint: ControlEndpoint, session: str, routes: RouteSet | None = None) -> None:
        self._endpoint = endpoint
        self._id = session
        self._routes = routes or RouteSet(SESSIONS)
        self._path = session_path(session)

    @property
    def id(self) -> str:
        return self._id

    async def state(self) -> SessionState:
        path, params = self._routes.state(self._id)
        answer = await self._endpoint.call("GET", path, params=params)
        return _parse("state", lambda v: SessionState.from_json(_object(v)), answer)

    async def entries(self, since: str | None = None) -> SessionEntries:
        path, params = self._routes.entries(self._id, since)
        answer = await self._endpoint.call("GET", path, params=params, payload=True)
        return _parse("entries", lambda v: SessionEntries.from_json(_object(v)), answer)

    def events(self) -> RemoteEventStream:
        return RemoteEventStream(self._endpoint, self._id, self._routes.events(self._id))

    async def _command(self, command: Mapping[str, Any]) -> ActionResult:
        path, body = self._routes.command(self._id, command)
        return await _result(self._endpoint, "POST", path, body)

    async def _act(self, action: Action) -> ActionResult:
        return await self._command(action.to_json())

    async def steer(self, prompt: Prompt) -> ActionResult:
        return await self._act(Action("steer", prompt=prompt))

    async def follow_up(self, prompt: Prompt) -> ActionResult:
        return await self._act(Action("follow_up", prompt=prompt))

    async def abort(self) -> ActionResult:
        return await self._act(Action("abort"))

    async def compact(self, instructions: str | None = None) -> ActionResult:
        return await self._act(Action("compact", instructions=instructions))

    async def update(self, patch: SessionUpdate) -> ActionResult:
        if not self._routes.dispatch:
            return await _result(self._endpoint, "PATCH", self._path, patch.to_json())
        if patch.name is not None:
            return rejected(UNSUPPORTED_CAPABILITY, _NO_ROUTE.format(what="a session name"), False)
        commands: list[tuple[str, dict[str, Any]]] = []
        if patch.leaf_entry_id is not None:
            commands.append(("leafEntryId", {"type": "navigate", "targetId": patch.leaf_entry_id}))
        if patch.model is not None:
            commands.append(("model", {"type": "set_model", "model": patch.model}))
        if patch.thinking_level is not None:
            commands.append(("thinkingLevel", {"type": "set_thinking", "level": patch.thinking_level}))
        result = ActionResult(True)
        landed: list[str] = []
        for field, command in commands:
            result = await self._command(command)
            if not result.ok:
                if not landed:
                    return result
                error = result.error
                reason = error.message if error is not None else "failed"
                return rejected(
                    PARTIAL_UPDATE, f"wrote {', '.join(landed)}, then failed: {reason}; read state()"
                )
            landed.append(field)
        return result

    async def answer_approval(
        self, approval_id: str, decision: Decision, *, by: str, reason: str | None = None
    ) -> ActionResult:
        if self._routes.dispatch:
            return rejected(UNSUPPORTED_CAPABILITY, _NO_ROUTE.format(what="answering an approval"), False)
        body: dict[str, Any] = {"decision": decision, "by": by}
        if reason:
            body["reason"] = reason
        path = session_path(self._id, f"/approvals/{quote(approval_id, safe='')}")
        try:  # 404 (no such approval) and 409 (closed) carry their result
            answer = await self._endpoint.call("POST", path, body=body, payload=True, accept=(404, 409))
            return _parse(f"POST {path}", lambda v: ActionResult.from_json(_object(v)), answer)
        except ControlRequestError as exc:
            return rejected(REQUEST_FAILED, exc.message, exc.retryable)

    async def delete(self) -> ActionResult:
        if self._routes.dispatch:
            return rejected(UNSUPPORTED_CAPABILITY, _NO_ROUTE.format(what="deleting a session"), False)
        return await _result(self._endpoint, "DELETE", self._path)


class RemoteSessions:
    def __init__(self, endpoint: ControlEndpoint, routes: RouteSet | None = None) -> None:
        self._endpoint = endpoint
        self._routes = routes or RouteSet(SESSIONS)

    async def list(self) -> Sequence[SessionListing]:
        if self._routes.dispatch:
            raise RemoteSessionsUnavailable(
                _NO_ROUTE.format(what="a session list"),
                status=None,
                code=SESSIONS_UNAVAILABLE,
                retryable=False,
            )
        try:
            answer = await self._endpoint.call("GET", "/control/sessions", payload=True)
        except ControlRequestError as exc:
            if exc.code == SESSIONS_UNAVAILABLE:
                raise RemoteSessionsUnavailable(
                    exc.message, status=exc.status, code=exc.code, retryable=exc.retryable
                ) from None
            raise
        return _parse("sessions", lambda v: [SessionListing.from_json(_object(s)) for s in _array(v)], answer)

    async def fork(self, from_session: str, at: str, into: str) -> ActionResult:
        if self._routes.dispatch:
            return rejected(UNSUPPORTED_CAPABILITY, _NO_ROUTE.format(what="forking a session"), False)
        body = {"from": from_session, "at": at}
        return await _result(self._endpoint, "PUT", session_path(into), body)

    def get(self, session: str) -> RemoteSession:
        return RemoteSession(self._endpoint, session, self._routes)


class RemoteSessionControl:
    """The hub of a serve, over HTTP. Make it with
    :func:`~fastagent_cli.remote.connect_session_control`; close it with :meth:`aclose` (or
    ``async with``)."""

    def __init__(
        self, endpoint: ControlEndpoint, capabilities: Capabilities, routes: RouteSet | None = None
    ) -> None:
        self.endpoint = endpoint
        self.routes = routes or RouteSet(SESSIONS)
        """The route set the serve was found to have."""
        self._capabilities = capabilities
        self._sessions = RemoteSessions(endpoint, self.routes)

    @property
    def url(self) -> str:
        return self.endpoint.base

    @property
    def sessions(self) -> RemoteSessions:
        return self._sessions

    async def capabilities(self) -> Capabilities:
        """What the serve allows (read once when connecting: it is static)."""
        return self._capabilities

    async def commands(self) -> Sequence[AgentCommand]:
        answer = await self.endpoint.call("GET", "/control/commands")
        return _parse("commands", lambda v: [AgentCommand.from_json(_object(c)) for c in _array(v)], answer)

    async def aclose(self) -> None:
        await self.endpoint.aclose()

    async def __aenter__(self) -> RemoteSessionControl:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def _result(endpoint: ControlEndpoint, method: str, path: str, body: Any = None) -> ActionResult:
    """An acting call's result; a failed request is ``ok: false`` with :data:`REQUEST_FAILED`."""
    try:
        answer = await endpoint.call(method, path, body=body, payload=True)
        return _parse(f"{method} {path}", lambda v: ActionResult.from_json(_object(v)), answer)
    except ControlRequestError as exc:
        return rejected(REQUEST_FAILED, exc.message, exc.retryable)
