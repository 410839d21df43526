"""Relay an event stream as Server-Sent Events, and stop the stream's producer when the client leaves.

Each event is one ``data: <json>\\n\\n`` message; a ``: ping\\n\\n`` comment goes out every
:data:`PING_INTERVAL_S` so remote consumers can tell a quiet run from a dead connection.

Per stream, a *puller* task pulls events and queues their messages, and the request's own task
sends what has queued up and *watches*: it pings, and it notices a client that went away even
while the agent is silent (a slow tool), by the write failing or by polling the transport every
:data:`DISCONNECT_POLL_S` (a timer, not a task). Either way the puller is cancelled, which closes
the agent's stream (:func:`~fastagent_cli.contract.closing`), which aborts the turn (under
:func:`~fastagent_cli.serving.host.serve` the handler is also cancelled the moment the connection
drops). Aborting takes a while (a tool's process killed, the model response closed), and until it
has settled the session's lease is held: a stream registered in a :class:`KeyedStreams` under a
key (``/invoke``: the session) lets a new request for that key stop the streams whose client is
gone (a :class:`StopSignal`, which wakes the relay at once) and wait until they have closed
(:meth:`KeyedStreams.reclaim`), so a client that left and came straight back is not answered
``session_busy``. (One task per stream besides the request's: a writer task and a task waiting
on the stop were two more task starts and a dozen more loop callbacks on every turn.)

Coalescing: the request's task wakes on the loop tick after the puller queued a message and sends
everything queued by then as one write. Events the agent emits together (the deltas of one model
read) leave in one write; an event that comes alone leaves alone, at once (no timer: the first
token is never held back). Each event stays one whole ``data: ...\\n\\n`` message, never split
across writes nor merged with another. While :data:`MAX_QUEUED_BYTES` wait for a slow client
the puller stops pulling, so the client's pace still holds the agent back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from fastagent_cli.contract import closing, event_to_wire

__all__ = [
    "DISCONNECT_POLL_S",
    "RECLAIM_TIMEOUT_S",
    "KeyedStreams",
    "MAX_QUEUED_BYTES",
    "PING_INTERVAL_S",
    "SSE_HEADERS",
    "StopSignal",
    "abort_connection",
    "client_gone",
    "stream_events",
]

log = logging.getLogger("fastagent.host")

PING_INTERVAL_S = 30.0
"""Seconds between ``: ping`` comments (patch it in tests)."""

DISCONNECT_POLL_S = 0.5
"""How often a silent stream checks that its client is still connected."""

SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
}

MAX_QUEUED_BYTES = 64 * 1024
"""Messages waiting for the client beyond which the reader stops pulling events."""

RECLAIM_TIMEOUT_S = 5.0
"""How long :meth:`KeyedStreams.reclaim` waits for an abandoned stream to finish closing."""

_PING = b": ping\n\n"


def client_gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


class KeyedStreams:
    """The streams in flight per key, so a new request for a key can stop those whose client
    already left (noticed now, not at the next poll) and wait until they have closed."""

    def __init__(self) -> None:
        self._live: dict[str, list[_Held]] = {}

    @contextlib.contextmanager
    def holding(self, key: str, request: web.BaseRequest) -> Iterator[StopSignal]:
        """Register ``request``'s stream under ``key`` while it runs; yields the event that asks
        it to stop (pass it to :func:`stream_events`)."""
        held = _Held(request, StopSignal(), asyncio.Event())
        self._live.setdefault(key, []).append(held)
        try:
            yield held.stop
        finally:
            held.closed.set()
            streams = self._live[key]
            streams.remove(held)
            if not streams:
                del self._live[key]

    async def reclaim(self, key: str) -> None:
        """Stop every stream under ``key`` whose client is gone and wait (up to
        :data:`RECLAIM_TIMEOUT_S`) until they have closed their event streams."""
        gone = [held for held in self._live.get(key, ()) if client_gone(held.request)]
        if not gone:
            return
        for held in gone:
            held.stop.set()
        waiters = [asyncio.ensure_future(held.closed.wait()) for held in gone]
        try:
            await asyncio.wait(waiters, timeout=RECLAIM_TIMEOUT_S)
        finally:
            for waiter in waiters:
                waiter.cancel()


@dataclass(frozen=True, slots=True, eq=False)
class _Held:
    request: web.BaseRequest
    stop: StopSignal
    closed: asyncio.Event


class StopSignal(asyncio.Event):
    """The event :meth:`KeyedStreams.holding` yields: setting it also wakes the relay of the
    stream at once (a plain :class:`asyncio.Event` is noticed at the next poll)."""

    def __init__(self) -> None:
        super().__init__()
        self._listeners: list[Callable[[], None]] = []

    def set(self) -> None:
        super().set()
        for listener in list(self._listeners):
            listener()

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)


class _Reader:
    """A stream's relay: :meth:`run` pulls the events in a task of its own and writes what they
    queued from the task that runs it (the request's own, under :func:`stream_events`)."""

    def __init__(
        self,
        response: web.StreamResponse,
        events: AsyncIterator[Any],
        encode: Callable[[Any], str],
        framed: bool = False,
    ) -> None:
        self.response = response
        self.events = events
        self.encode = encode
        self.framed = framed
        self._queued: list[str] = []
        self._queued_bytes = 0
        self._room = asyncio.Event()
        self._waiter: asyncio.Future[None] | None = None
        self._poll: asyncio.TimerHandle | None = None

    async def run(self, request: web.BaseRequest | None = None, stop: asyncio.Event | None = None) -> bool:
        """Relay until the stream ends (``True``) or, with ``request``, its client leaves or
        ``stop`` is set (``False``; pinging meanwhile). The puller is stopped (which closes the
        agent's stream) however this ends; a failed write raises its error, the agent stream's
        error is raised once what it queued before is written."""
        pulling = asyncio.get_running_loop().create_task(self._pull())
        pulling.add_done_callback(_retrieve)
        pulling.add_done_callback(lambda _: self._wake())
        unlisten = stop.listen(self._wake) if isinstance(stop, StopSignal) else None
        try:
            ended = await self._write(pulling, request, stop)
        finally:
            if unlisten is not None:
                unlisten()
            if self._poll is not None:
                self._poll.cancel()
                self._poll = None
            if not pulling.done():
                pulling.cancel()
                await asyncio.wait({pulling})
        if ended:
            error = pulling.exception()
            if error is not None:
                raise error
        return ended

    async def _pull(self) -> None:
        async with closing(self.events) as events:
            async for event in events:
                message = self.encode(event) if self.framed else f"data: {self.encode(event)}\n\n"
                if not message:
                    continue  # framed: an item that says nothing
                self._queued.append(message)
                self._queued_bytes += len(message)
                self._wake()
                if self._queued_bytes >= MAX_QUEUED_BYTES:
                    self._room.clear()
                    await self._room.wait()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _write(
        self, pulling: asyncio.Task[None], request: web.BaseRequest | None, stop: asyncio.Event | None
    ) -> bool:
        """Coalescing: this task wakes on the loop tick after the puller queued a message and
        sends everything queued by then as one write."""
        loop = asyncio.get_running_loop()
        next_ping = loop.time() + PING_INTERVAL_S
        while True:
            if self._queued:
                data = "".join(self._queued).encode()
                self._queued.clear()
                self._queued_bytes = 0
                self._room.set()
                await self.response.write(data)
                continue
            if pulling.done():
                return True
            if request is not None:
                if (stop is not None and stop.is_set()) or client_gone(request):
                    log.debug("[host] client left %s mid-stream; cancelling the turn", request.raw_path)
                    return False
                if loop.time() >= next_ping:
                    next_ping = loop.time() + PING_INTERVAL_S
                    await self.response.write(_PING)
                    continue
            if request is not None and self._poll is None:  # a client gone while the agent is silent
                self._poll = loop.call_at(min(loop.time() + DISCONNECT_POLL_S, next_ping), self._polled)
            self._waiter = waiter = loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    def _polled(self) -> None:
        """The poll timer fired: look again (one timer per poll interval, not one per wait)."""
        self._poll = None
        self._wake()


async def stream_events(
    request: web.BaseRequest,
    events: AsyncIterator[Any],
    *,
    encode: Callable[[Any], str] = event_to_wire,
    headers: Mapping[str, str] | None = None,
    stop: asyncio.Event | None = None,
    framed: bool = False,
) -> web.StreamResponse:
    """Answer ``request`` with ``events`` as SSE (200), each item one ``data:`` line of
    ``encode(item)`` (an ``AgentEvent``'s JSON by default) and ``headers`` added to the SSE ones.
    ``framed``: ``encode(item)`` is the whole message (``event: ...\ndata: ...\n\n``), for
    protocols whose events are named.
    Returns when the stream ends, the client leaves or ``stop`` is set (by
    :meth:`KeyedStreams.reclaim`); the stream is closed in every case."""
    response = web.StreamResponse(status=200, headers={**SSE_HEADERS, **(headers or {})})
    try:
        await response.prepare(request)
    except BaseException:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
        raise
    try:
        ended = await _Reader(response, events, encode, framed).run(request, stop)
    except ConnectionError:
        return response  # the client is gone: nothing more to write
    except Exception as error:
        if not client_gone(request):
            log.error(
                "[host] the agent's stream for %s raised (%s: %s); closing the response",
                request.raw_path,
                type(error).__name__,
                error,
            )
            abort_connection(request)
        return response
    if ended and not client_gone(request):
        await response.write_eof()
    return response


def _retrieve(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()


def abort_connection(request: web.BaseRequest) -> None:
    """Cut a response that already started: the client sees a truncated stream, never a hang."""
    transport = request.transport
    if transport is not None:
        transport.abort()
