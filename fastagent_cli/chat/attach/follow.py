"""Following a session: rounds of subscribe, read what was missed, follow live, until detached.

Every round has one shape: open ``events()`` and wait until the serve subscribed, read
``entries(since=<cursor>)`` and ``state()``, show what is new, then follow the live events until
the stream fails. A failed round is judged by :func:`~.link.decide` (retry within the budget,
reattach to a restarted serve, or give up); the next round reads on from the same cursor, so what
happened meanwhile is shown once, from the record, never from the live stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from fastagent_cli.chat.approval_prompt import ApprovalPrompt
from fastagent_cli.chat.attach.link import RETRY_PAUSE_S, Link, decide
from fastagent_cli.chat.transcript import Transcript
from fastagent_cli.control import Session, SessionEvent, SessionEventsClosed, SessionState, pending_labels
from fastagent_cli.errors import ControlRequestError, FastagentError

__all__ = ["HEALTHY_S", "AttachEnded", "Follower", "Screen"]

HEALTHY_S = 10.0
"""A round that stayed connected this long was healthy even if it delivered nothing (an idle
session); one that keeps ending at once without delivering (a buffering proxy) spends the budget."""


class AttachEnded(FastagentError):
    """Attach cannot go on (the serve is gone past its budget, the token is refused, the session
    was deleted): the message says why."""


class Screen(Protocol):
    """What the follower needs of the terminal UI."""

    def printing(self) -> AbstractAsyncContextManager[None]:
        """Hold the prompt while the body prints (a no-op while a run is shown)."""
        ...

    async def enter_run(self) -> None: ...

    async def leave_run(self) -> None: ...

    def show_state(self, state: SessionState) -> None: ...

    def show_change(self, data: dict[str, object]) -> None:
        """A ``state_changed`` (model, thinking level, name)."""
        ...

    def show_pending(self, steering: tuple[str, ...], follow_up: tuple[str, ...]) -> None: ...

    def show_connection(self, problem: str | None) -> None:
        """``None``: connected; else what is wrong (the status line says it)."""
        ...

    def note(self, text: str, style: str = "cyan") -> None: ...


class Follower:
    """Follows ``session`` through ``link`` onto ``transcript`` and ``screen``."""

    def __init__(
        self,
        link: Link,
        session: str,
        transcript: Transcript,
        screen: Screen,
        approvals: ApprovalPrompt | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.link = link
        self.session = session
        self.transcript = transcript
        self.screen = screen
        self.approvals = approvals
        self.clock = clock
        self.runs_started = 0
        """How many runs this attach saw start (the data plane's failures are shown only for a
        run that never started)."""
        self.state: SessionState | None = None
        self._progress = False
        self._connected_at: float | None = None
        self._reattached = False

    # --- start-up -------------------------------------------------------------------------------

    async def connect(self) -> SessionState:
        """Connect within the start-up budget; the session's state."""
        started = self.clock()
        while True:
            try:
                control = self.link.control or await self.link.connect()
                state = await control.sessions.get(self.session).state()
                self.state = state
                return state
            except ControlRequestError as exc:
                discovery, fresh = self.link.rediscover()
                decision = decide(
                    exc,
                    local=self.link.local,
                    discovery=discovery,
                    fresh=fresh,
                    down_s=self.clock() - started,
                    startup=True,
                )
                if decision.kind == "exit":
                    raise AttachEnded(decision.message) from None
                if decision.kind == "reattach" and decision.fresh is not None:
                    self.link.endpoint = decision.fresh
                    await self.link.aclose()
                    continue
                self.screen.show_connection("waiting for the serve…")
                await asyncio.sleep(RETRY_PAUSE_S)

    # --- rounds ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Follow until cancelled (a detach); AttachEnded when it cannot go on."""
        first = True
        down_since: float | None = None
        while True:
            self._progress = False
            self._connected_at = None
            try:
                await self._round(first)
                error: BaseException = SessionEventsClosed("ended", "the event stream ended")
            except (SessionEventsClosed, ControlRequestError) as exc:
                error = exc
            first = False
            self.transcript.connection_lost()
            if self._was_healthy():
                down_since = None
            if down_since is None:
                down_since = self.clock()
            discovery, fresh = self.link.rediscover()
            decision = decide(
                error,
                local=self.link.local,
                discovery=discovery,
                fresh=fresh,
                down_s=self.clock() - down_since,
                startup=False,
            )
            if decision.kind == "reattach" and decision.fresh is not None:
                try:
                    await self.link.connect(decision.fresh)
                except ControlRequestError as exc:  # written, not listening yet: the budget decides
                    decision = decide(
                        exc,
                        local=True,
                        discovery="unavailable",
                        fresh=None,
                        down_s=self.clock() - down_since,
                        startup=False,
                    )
                else:
                    self._reattached = True
                    down_since = None
                    continue
            if decision.kind == "exit":
                raise AttachEnded(decision.message)
            self.screen.show_connection("reconnecting…")
            await asyncio.sleep(RETRY_PAUSE_S)

    def _was_healthy(self) -> bool:
        """The last round delivered something, or stayed connected for :data:`HEALTHY_S`."""
        connected = self._connected_at
        return self._progress or (connected is not None and self.clock() - connected >= HEALTHY_S)

    async def _round(self, first: bool) -> None:
        control = self.link.control or await self.link.connect()
        session = control.sessions.get(self.session)
        async with session.events() as events:
            await events.ready()
            read = await session.entries(since=self.transcript.cursor)
            state = await session.state()
            if self._deleted(first, read.entries, state):
                raise AttachEnded(f"session {self.session!r} was deleted")
            self.screen.show_connection(None)
            if not first:
                restarted = " (the serve restarted)" if self._reattached else ""
                self._reattached = False
                async with self.screen.printing():
                    self.screen.note(f"⋯ reconnected to {control.url}{restarted}", "dim")
            async with self.screen.printing():
                self.transcript.show_entries(read, first=first)
            self._progress = bool(read.entries) or first
            self._connected_at = self.clock()
            self.state = state
            self.screen.show_state(state)
            self.screen.show_pending(*state.pending.labels())
            if self.approvals is not None:
                self.approvals.sync(state.approvals)
            if state.status == "running" or state.approvals:  # a restarted serve's requests wait too
                await self.screen.enter_run()
            else:
                self.transcript.run_gone()
                await self.screen.leave_run()
            async for event in events:
                self._progress = True
                await self._handle(session, event)

    def _deleted(self, first: bool, entries: object, state: SessionState) -> bool:
        """The record the cursor is in is gone (``entries(since=)`` of an unknown cursor answers
        everything, which for a deleted session is nothing)."""
        gone = not entries and state.leaf_entry_id is None
        return not first and self.transcript.cursor is not None and gone

    async def _handle(self, session: Session, event: SessionEvent) -> None:
        kind, data = event.type, event.data
        if kind == "run_started":
            self.runs_started += 1
            await self.screen.enter_run()
        elif kind == "queue_changed":
            self.screen.show_pending(*pending_labels(data))
            return
        elif kind == "state_changed":
            self.screen.show_change(dict(data))
            return
        async with self.screen.printing():
            if self.approvals is not None:
                self.approvals.feed(event)
            resync = self.transcript.feed(event)
        if resync:
            read = await session.entries(since=self.transcript.cursor)
            async with self.screen.printing():
                self.transcript.show_entries(read)
        if kind == "run_settled":
            self.screen.show_pending((), ())
            self.state = await session.state()
            self.screen.show_state(self.state)
            if self.approvals is not None:
                self.approvals.sync(self.state.approvals)
            if not self.state.approvals:  # a run the serve stopped leaves its requests waiting
                await self.screen.leave_run()
