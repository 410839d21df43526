"""A session's live events over ``GET /control/sessions/{id}/events``: the remote
:class:`~fastagent_cli.control.SessionEventStream`.

The connection opens when the stream is made (``session.events()``); :meth:`ready` returns once the
response headers arrived, which the server sends only after it subscribed, so nothing published
after ``ready()`` is missed. A reader task takes the SSE messages off the connection as they come
(so a consumer busy with a backfill does not stall the server) and checks their envelope
``{sessionId, epoch, seq, event}``: ``seq`` must count on from 0 without a gap.

The stream has no natural end. Only the consumer's own detach (:meth:`aclose`, leaving ``async
with``, ``break`` then ``aclose``) ends it cleanly; every other end raises
:class:`~fastagent_cli.control.SessionEventsClosed` once the events already received are drained,
with ``reason``:

* ``"gap"``: a ``seq`` was skipped (events were lost);
* ``"protocol"``: a message that is not an envelope;
* ``"disconnected"``: the connection failed (a server restart included);
* ``"idle"``: no bytes at all, pings included, for three heartbeats (a dead connection);
* ``"ended"``: the server closed the stream (the session was deleted, the watcher fell 10 000
  events behind, or the server is stopping);
* ``"overflow"``: the consumer fell 10 000 events behind this client's own buffer.

Opening the stream can fail too: :meth:`ready` (and the first iteration) raise
:class:`~fastagent_cli.errors.ControlRequestError` with the HTTP status (``401``...) or without one
(unreachable, no answer within 10 s). Recover with ``state()`` and ``entries(since=...)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import Any

import httpx

from fastagent_cli.control import SUBSCRIBER_BUFFER_CAP, SessionEvent, SessionEventsClosed
from fastagent_cli.remote.endpoint import ControlEndpoint, session_path

__all__ = ["RemoteEventStream"]


class RemoteEventStream:
    """One subscription to one session's events over HTTP (see the module docstring)."""

    def __init__(self, endpoint: ControlEndpoint, session: str, path: str | None = None) -> None:
        self._endpoint = endpoint
        self.session = session
        self._path = path if path is not None else session_path(session, "/events")
        self.epoch: str | None = None
        """The serve's ``epoch`` (a new one after a restart), once the first event arrived."""
        self._buffer: deque[SessionEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._failure: BaseException | None = None
        self._detached = False
        self._ready: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._seq = 0
        with contextlib.suppress(RuntimeError):  # no running loop: connect on first use
            self._start()

    def _start(self) -> asyncio.Future[None]:
        if self._ready is None:
            loop = asyncio.get_running_loop()
            self._ready = loop.create_future()
            self._ready.add_done_callback(_retrieve)
            self._task = loop.create_task(self._run())
        return self._ready

    # --- the reader -----------------------------------------------------------------------------

    async def _run(self) -> None:
        assert self._ready is not None
        failure: BaseException
        try:
            async with self._endpoint.stream("GET", self._path) as response:
                self._ready.set_result(None)
                failure = await self._read(response)
        except asyncio.CancelledError:
            if not self._ready.done():
                self._ready.set_exception(SessionEventsClosed("detached", "the consumer detached"))
            raise
        except Exception as exc:  # ControlRequestError from opening, or a transport failure
            failure = exc if not self._ready.done() else _closed(exc)
            if not self._ready.done():
                self._ready.set_exception(exc)
        self._fail(failure)

    async def _read(self, response: httpx.Response) -> BaseException:
        what = f"the event stream of {self.session!r}"
        try:
            async for data in self._endpoint.data(response):
                problem = self._take(data)
                if problem is not None:
                    return problem
        except TimeoutError:
            return SessionEventsClosed(
                "idle",
                f"{what}: no bytes for {self._endpoint.idle_s:g} s (no heartbeats): a dead connection",
            )
        except httpx.HTTPError as exc:
            return _closed(exc)
        return SessionEventsClosed(
            "ended",
            f"{what} was ended by the server (the session was deleted, this watcher fell "
            f"{SUBSCRIBER_BUFFER_CAP} events behind, or the serve is stopping)",
        )

    def _take(self, data: str) -> SessionEventsClosed | None:
        """Check one envelope and buffer its event; the failure when it is not one."""
        try:
            wire: Any = json.loads(data)
        except ValueError:
            return SessionEventsClosed("protocol", "the event stream carried data that is not JSON")
        if (
            not isinstance(wire, Mapping)
            or isinstance(wire.get("seq"), bool)
            or not isinstance(wire.get("seq"), int)
            or not isinstance(wire.get("epoch"), str)
            or not isinstance(wire.get("event"), Mapping)
        ):
            return SessionEventsClosed(
                "protocol", "the event stream carried a message that is not {sessionId, epoch, seq, event}"
            )
        if wire.get("sessionId") != self.session:
            return SessionEventsClosed("protocol", f"an event of session {wire.get('sessionId')!r} arrived")
        if self.epoch is not None and wire["epoch"] != self.epoch:
            return SessionEventsClosed("protocol", "the epoch changed within one connection")
        if wire["seq"] != self._seq:
            return SessionEventsClosed(
                "gap",
                f"events were lost in transit (expected seq {self._seq}, got {wire['seq']}); "
                "resync from entries()",
            )
        try:
            event = SessionEvent.from_json(wire["event"])
        except ValueError as exc:
            return SessionEventsClosed("protocol", f"a malformed event arrived: {exc}")
        self.epoch = wire["epoch"]
        self._seq += 1
        if len(self._buffer) >= SUBSCRIBER_BUFFER_CAP:
            return SessionEventsClosed(
                "overflow", f"the consumer fell {SUBSCRIBER_BUFFER_CAP} events behind; resync from entries()"
            )
        self._buffer.append(event)
        self._wake()
        return None

    def _fail(self, failure: BaseException) -> None:
        if self._failure is None:
            self._failure = failure
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the consumer's side --------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Events received and not consumed yet."""
        return len(self._buffer)

    async def ready(self) -> None:
        """Return once the server subscribed (the response headers arrived); raise
        ControlRequestError if the stream cannot be opened."""
        await asyncio.shield(self._start())

    def drain(self) -> list[SessionEvent]:
        """Every event received and not consumed yet, at once."""
        taken = list(self._buffer)
        self._buffer.clear()
        return taken

    def __aiter__(self) -> AsyncIterator[SessionEvent]:
        return self

    async def __anext__(self) -> SessionEvent:
        self._start()
        while True:
            if self._detached:
                raise StopAsyncIteration
            if self._buffer:
                return self._buffer.popleft()
            if self._failure is not None:
                raise self._failure
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def aclose(self) -> None:
        """Detach (a clean end: iteration stops, nothing is raised) and close the connection."""
        self._detached = True
        self._buffer.clear()
        self._wake()
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})

    async def __aenter__(self) -> RemoteEventStream:
        self._start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _closed(exc: BaseException) -> SessionEventsClosed:
    reason = str(exc) or type(exc).__name__
    closed = SessionEventsClosed("disconnected", f"the event stream's connection failed: {reason}")
    closed.__cause__ = exc
    return closed


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()
