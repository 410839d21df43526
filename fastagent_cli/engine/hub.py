"""The session event hub: live fan-out of :class:`~fastagent_cli.control.SessionEvent` per session.

A subscription exists from :meth:`EventHub.subscribe` on (synchronously, so a caller that
subscribes, then reads history, then iterates misses nothing) until the consumer closes it.
Publishing never waits: each subscriber has its own queue, and one that falls
:data:`~fastagent_cli.control.SUBSCRIBER_BUFFER_CAP` events behind is closed (a warning names the
session); it drains what it holds, then ends with
:class:`~fastagent_cli.control.SessionEventsClosed`. Deleting a session ends its subscriptions
the same way. Publishing to a session nobody watches costs one dictionary lookup.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator
from types import TracebackType

from fastagent_cli.control import SUBSCRIBER_BUFFER_CAP, SessionEvent, SessionEventsClosed

__all__ = ["EventHub", "Subscription"]

log = logging.getLogger("fastagent.control")

_REASONS = {
    "deleted": "the session was deleted",
    "overflow": f"the watcher fell {SUBSCRIBER_BUFFER_CAP} events behind; resync from entries()",
    "closed": "the agent is shutting down",
}


class Subscription:
    """One watcher of one session (an async iterator of events; also an async context manager)."""

    def __init__(self, hub: EventHub, session: str, cap: int) -> None:
        self._hub = hub
        self.session = session
        self._cap = cap
        self._buffer: deque[SessionEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._ended: str | None = None
        """Why the hub ended it (the consumer drains what is buffered first)."""
        self._detached = False

    # --- the hub's side -------------------------------------------------------------------------

    def push(self, event: SessionEvent) -> None:
        if self._ended is not None or self._detached:
            return
        if len(self._buffer) >= self._cap:
            log.warning(
                "[control] a watcher of session %s is %d events behind: closing it (it resyncs "
                "through entries())",
                self.session,
                self._cap,
            )
            self.end("overflow")
            return
        self._buffer.append(event)
        self._wake()

    def end(self, reason: str) -> None:
        if self._ended is None:
            self._ended = reason
            self._hub._drop(self)
            self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the consumer's side --------------------------------------------------------------------

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def __aiter__(self) -> AsyncIterator[SessionEvent]:
        return self

    async def __anext__(self) -> SessionEvent:
        while True:
            if self._buffer:
                return self._buffer.popleft()
            if self._detached:
                raise StopAsyncIteration
            if self._ended is not None:
                raise SessionEventsClosed(self._ended, _REASONS.get(self._ended, self._ended))
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def ready(self) -> None:
        """Subscribed at creation: nothing to wait for in process."""

    def drain(self) -> list[SessionEvent]:
        """Every buffered event, at once (none after a detach)."""
        taken = list(self._buffer)
        self._buffer.clear()
        return taken

    async def aclose(self) -> None:
        """Detach (a clean end: iteration stops, nothing is raised)."""
        self._detached = True
        self._buffer.clear()
        self._hub._drop(self)
        self._wake()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class EventHub:
    def __init__(self, cap: int = SUBSCRIBER_BUFFER_CAP) -> None:
        self.cap = cap
        self._watchers: dict[str, list[Subscription]] = {}

    def subscribe(self, session: str) -> Subscription:
        subscription = Subscription(self, session, self.cap)
        self._watchers.setdefault(session, []).append(subscription)
        return subscription

    def publish(self, session: str, event: SessionEvent) -> None:
        watchers = self._watchers.get(session)
        if watchers:
            for subscription in list(watchers):
                subscription.push(event)

    def watching(self, session: str) -> int:
        return len(self._watchers.get(session, ()))

    def end_session(self, session: str, reason: str = "deleted") -> None:
        """End every subscription of ``session`` (they raise SessionEventsClosed once drained)."""
        for subscription in list(self._watchers.get(session, ())):
            subscription.end(reason)

    def close(self) -> None:
        for session in list(self._watchers):
            self.end_session(session, "closed")

    def _drop(self, subscription: Subscription) -> None:
        watchers = self._watchers.get(subscription.session)
        if watchers is not None and subscription in watchers:
            watchers.remove(subscription)
            if not watchers:
                del self._watchers[subscription.session]
