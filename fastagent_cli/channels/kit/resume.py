"""A channel turn that waited for an approval when ``start`` stopped: its answer is the resumed run.

When a turn's tool call asks for approval, the runner marks the turn ``awaiting``
(:meth:`~fastagent_cli.channels.kit.turn_store.TurnStore.park`). The next start recovers such a
turn, and while its session still holds a request waiting (``state().approvals``) it does not send
the prompt again (that would withdraw the request and ask anew): :meth:`ResumedTurn.open`
subscribes to the session's events, and the run an answer starts (a button pressed after the
restart, the control plane, the web chat) is the turn's answer: its text, tools and further
requests projected as the invoke stream projects them, its ``run_settled`` the terminal. When the
requests expire with nobody answering, the turn ends with :data:`EXPIRED_NOTICE`. A session with
nothing waiting any more (answered, or it never got as far) opens nothing: the turn is replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastagent_cli.contract import AgentEvent, Completed, Failed, Text
from fastagent_cli.control import Session, SessionControl, SessionEventStream, SessionState
from fastagent_cli.control.events import SessionEventsClosed
from fastagent_cli.control.projection import project, settled_terminal
from fastagent_cli.messages import now_ms

__all__ = ["EXPIRED_NOTICE", "ResumedTurn"]

log = logging.getLogger("fastagent.channel")

EXPIRED_NOTICE = "⌛ The approval request expired before anyone answered it; ask again to retry."
_SLACK_S = 1.0
"""After the last request's expiry, how long before the state is read again."""


def _deadline(state: SessionState) -> int | None:
    """When the last waiting request expires (epoch ms); ``None``: one never does."""
    expiries = [a.expires_at for a in state.approvals]
    if not expiries or any(e is None for e in expiries):
        return None
    return max(e for e in expiries if e is not None)


class ResumedTurn:
    """The events of the run that answers a recovered turn's approval."""

    def __init__(self, session: Session, stream: SessionEventStream, state: SessionState) -> None:
        self.session = session
        self.stream = stream
        self.state = state

    @classmethod
    async def open(cls, control: SessionControl, session_id: str) -> ResumedTurn | None:
        """Follow ``session_id`` when a request of it still waits (subscribed before reading the
        state, so nothing the answer starts is missed); ``None`` otherwise."""
        session = control.sessions.get(session_id)
        stream = session.events()
        await stream.__aenter__()
        try:
            await stream.ready()
            state = await session.state()
        except BaseException:
            await stream.aclose()
            raise
        if not state.approvals and state.status != "running":
            await stream.aclose()
            return None
        return cls(session, stream, state)

    async def events(self) -> AsyncIterator[AgentEvent]:
        run_id = self.state.active_run_id if self.state.status == "running" else None
        deadline = _deadline(self.state)
        try:
            while True:
                wait = None if run_id is not None or deadline is None else (deadline - now_ms()) / 1000
                try:
                    event = await asyncio.wait_for(self.stream.__anext__(), _wait(wait))
                except TimeoutError:
                    state = await self.session.state()
                    if state.approvals or state.status == "running":
                        deadline = _deadline(state)
                        run_id = state.active_run_id
                        continue
                    log.info("[approval] session=%s: the requests expired unanswered", self.session.id)
                    yield Text(EXPIRED_NOTICE)
                    yield Completed(None)
                    return
                if run_id is None and event.type == "run_started":
                    run_id = event.run_id
                if run_id is None or event.run_id != run_id:
                    continue
                if event.type == "run_settled":
                    yield settled_terminal(event.data)
                    return
                projected = project(event)
                if projected is not None:
                    yield projected
        except SessionEventsClosed as exc:
            yield Failed(f"the session's events ended: {exc}", True)
        finally:
            with contextlib.suppress(Exception):
                await self.stream.aclose()


def _wait(seconds: float | None) -> float | None:
    return None if seconds is None else max(0.0, seconds) + _SLACK_S
