"""The session hub's interface: what the local hub implements and a remote client mirrors.

::

    control: SessionControl = opened.control          # or a remote client
    await control.capabilities()                       # what this deployment allows
    await control.commands()                           # the skills a / composer lists
    await control.sessions.list()                      # the conversation list
    await control.sessions.fork("s1", at=entry, into="s1-b")
    s1 = control.sessions.get("s1")                    # a pure binding: an id, nothing to close
    async with s1.events() as events:                  # subscribed from this call on
        backlog = await s1.entries(since=cursor)       # then backfill, then follow
        async for event in events: ...
    await s1.steer(Prompt("use uv, not pip"))          # joins the active run
    await s1.follow_up(Prompt("then summarize"))       # FIFO, when the run would stop
    await s1.abort()                                   # the invoke ends failed{code: aborted}
    await s1.compact(instructions="keep the decisions")
    await s1.update(SessionUpdate(model="anthropic/claude-sonnet-4-5"))
    await s1.answer_approval("ap_1f2e", "deny", by="alice", reason="not on prod")
    await s1.delete()

``invoke`` stays the only way to start work; actions modulate the run an invoke drives. Results
are :class:`~fastagent_cli.control.results.ActionResult` values, never raises: acceptance is not
outcome. Reads are total (an unknown session reads as idle with no entries) except
``sessions.list()`` (:class:`~fastagent_cli.control.results.SessionsUnavailable`) and
``commands()`` (an unreadable definition raises, uncoded).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Protocol, runtime_checkable

from fastagent_cli.contract import Prompt
from fastagent_cli.control.approvals import Decision
from fastagent_cli.control.events import SessionEvent
from fastagent_cli.control.results import ActionResult
from fastagent_cli.control.types import (
    AgentCommand,
    Capabilities,
    SessionEntries,
    SessionListing,
    SessionState,
    SessionUpdate,
)

__all__ = ["Session", "SessionCollection", "SessionControl", "SessionEventStream"]


@runtime_checkable
class SessionEventStream(Protocol):
    """One subscription to a session's live events.

    It has no natural end: the consumer decides (``break``, :meth:`aclose`, leaving the ``async
    with``). Any other end raises
    :class:`~fastagent_cli.control.events.SessionEventsClosed` (deleted, overflow) or, remotely, a
    transport error. :meth:`ready` returns once the subscription exists, which is the point from
    which nothing is missed: subscribe, await ``ready()``, backfill from ``entries()``, follow.
    """

    def __aiter__(self) -> AsyncIterator[SessionEvent]: ...

    async def __anext__(self) -> SessionEvent: ...

    async def ready(self) -> None: ...

    @property
    def pending(self) -> int:
        """Events that arrived and were not consumed yet."""
        ...

    def drain(self) -> list[SessionEvent]:
        """The events that arrived and were not consumed yet, without waiting (a writer sends
        them together)."""
        ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> SessionEventStream: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class Session(Protocol):
    """One session, bound by id (``sessions.get(id)`` does no IO)."""

    @property
    def id(self) -> str: ...

    async def state(self) -> SessionState: ...

    async def entries(self, since: str | None = None) -> SessionEntries:
        """Every entry appended after ``since`` (an append-order cursor, branches regardless);
        all of them when ``since`` is unknown. Never creates a session."""
        ...

    def events(self) -> SessionEventStream: ...

    async def steer(self, prompt: Prompt) -> ActionResult:
        """Join the active run: delivered after the current tool batch, before the next model
        call."""
        ...

    async def follow_up(self, prompt: Prompt) -> ActionResult:
        """Queue for the active run, FIFO: delivered when the run would otherwise stop."""
        ...

    async def abort(self) -> ActionResult:
        """Stop the active run (its queues, its retry wait, its tools) or a manual compaction."""
        ...

    async def compact(self, instructions: str | None = None) -> ActionResult:
        """Summarise the history at a session boundary (accepted fast; the outcome arrives as
        ``compaction_finished``)."""
        ...

    async def update(self, patch: SessionUpdate) -> ActionResult: ...

    async def answer_approval(
        self, approval_id: str, decision: Decision, *, by: str, reason: str | None = None
    ) -> ActionResult:
        """Approve or deny a tool call waiting for one (``state().approvals``) on behalf of
        ``by`` (who, for the audit); a deny's ``reason`` is what the model reads. Refusals:
        ``no_such_approval``, ``approval_closed`` (answered, expired or withdrawn)."""
        ...

    async def delete(self) -> ActionResult:
        """Irreversible; ends the session's live event streams."""
        ...


class SessionCollection(Protocol):
    async def list(self) -> Sequence[SessionListing]: ...

    async def fork(self, from_session: str, at: str, into: str) -> ActionResult:
        """Copy ``from_session``'s history up to entry ``at`` into the new session ``into``
        (idempotent: the same fork again is ok and writes nothing)."""
        ...

    def get(self, session: str) -> Session: ...


class SessionControl(Protocol):
    @property
    def sessions(self) -> SessionCollection: ...

    async def capabilities(self) -> Capabilities: ...

    async def commands(self) -> Sequence[AgentCommand]: ...
