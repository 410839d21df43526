"""Relay an event stream as Server-Sent Events, and stop the stream's producer when the client leaves.

Each event is one ``data: <json>\\n\\n`` message; a ``: ping\\n\\n`` comment goes out every
:data:`PING_INTERVAL_S` so remote consumers can tell a quiet run from a dead connection.

Per stream, a *reader* pulls events and queues their messages, a *writer* sends what has queued
up, and the request's own task *watches*: it pings, and it notices a client that went away even
while the agent is silent (a slow tool), by the write failing or by polling the transport every
:data:`DISCONNECT_POLL_S`. Either way the reader is cancelled, which closes the agent's stream
(:func:`~fastagent_cli.contract.closing`), which aborts the turn (under
:func:`~fastagent_cli.serving.host.serve` the handler is also cancelled the moment the connection
drops). Aborting takes a while (a tool's process killed, the model response closed), and until it
has settled the session's lease is held: a stream registered in a :class:`KeyedStreams` under a
key (``/invoke``: the session) lets a new request for that key stop the streams whose client is
gone and wait until they have closed (:meth:`KeyedStreams.reclaim`), so a client that left and
came straight back is not answered ``session_busy``.

Coalescing: the writer wakes on the loop tick after the reader queued a message and sends
everything queued by then as one write. Events the agent emits together (the deltas of one model
read) leave in one write; an event that comes alone leaves alone, at once (no timer: the first
token is never held back). Each event stays one whole ``data: ...\\n\\n`` message, never split
across writes nor merged with another. While :data:`MAX_QUEUED_BYTES` wait for a slow client
the reader stops pulling, so the client's pace still holds the agent back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
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
    def holding(self, key: str, request: web.BaseRequest) -> Iterator[asyncio.Event]:
        """Register ``request``'s stream under ``key`` while it runs; yields the event that asks
        it to stop (pass it to :func:`stream_events`)."""
        held = _Held(request, asyncio.Event(), asyncio.Event())
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
    stop: asyncio.Event
    closed: asyncio.Event


class _Reader:
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
        self.writing = False
        self._queued: list[str] = []
        self._queued_bytes = 0
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._ended = False

    async def run(self) -> None:
        """Pull events until the stream ends, then wait for the writer to send the last ones.
        A failed write stops the pulling at once and ends this task with the writer's error."""
        writer = asyncio.create_task(self._write())
        writer.add_done_callback(functools.partial(_stop_on_failure, asyncio.current_task()))
        try:
            async with closing(self.events) as events:
                async for event in events:
                    message = self.encode(event) if self.framed else f"data: {self.encode(event)}\n\n"
                    if not message:
                        continue  # framed: an item that says nothing
                    self._queued.append(message)
                    self._queued_bytes += len(message)
                    self._wake.set()
                    if self._queued_bytes >= MAX_QUEUED_BYTES:
                        self._room.clear()
                        await self._room.wait()
            self._ended = True
            self._wake.set()
            await writer
        except asyncio.CancelledError:
            failure = None if not writer.done() or writer.cancelled() else writer.exception()
            if failure is not None:
                raise failure from None
            raise
        finally:
            if not writer.done():
                writer.cancel()
                await asyncio.wait({writer})

    async def _write(self) -> None:
        while True:
            if not self._queued:
                if self._ended:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            data = "".join(self._queued).encode()
            self._queued.clear()
            self._queued_bytes = 0
            self._room.set()
            self.writing = True
            try:
                await self.response.write(data)
            finally:
                self.writing = False


def _stop_on_failure(reader: asyncio.Task[Any] | None, writer: asyncio.Task[None]) -> None:
    if reader is not None and not writer.cancelled() and writer.exception() is not None:
        reader.cancel()


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
    reader = _Reader(response, events, encode, framed)
    task = asyncio.create_task(reader.run())
    # However this handler ends (it may itself be cancelled mid-cleanup when the client leaves), a
    # reader that failed writing to a closed connection is never "Task exception was never
    # retrieved" in the log.
    task.add_done_callback(_retrieve)
    try:
        await _watch(request, response, reader, task, stop or asyncio.Event())
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieve it now: the handler may be cancelled before _finish looks
    return await _finish(request, response, task)


async def _watch(
    request: web.BaseRequest,
    response: web.StreamResponse,
    reader: _Reader,
    task: asyncio.Task[None],
    stop: asyncio.Event,
) -> None:
    loop = asyncio.get_running_loop()
    next_ping = loop.time() + PING_INTERVAL_S
    stopped = asyncio.ensure_future(stop.wait())
    try:
        while True:
            delay = max(0.0, min(DISCONNECT_POLL_S, next_ping - loop.time()))
            await asyncio.wait({task, stopped}, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                return
            if stop.is_set() or client_gone(request):
                log.debug("[host] client left %s mid-stream; cancelling the turn", request.raw_path)
                return
            if loop.time() >= next_ping:
                next_ping = loop.time() + PING_INTERVAL_S
                if not reader.writing:
                    try:
                        await response.write(_PING)
                    except ConnectionError:
                        return
    finally:
        stopped.cancel()


async def _finish(
    request: web.BaseRequest, response: web.StreamResponse, task: asyncio.Task[None]
) -> web.StreamResponse:
    error = None if task.cancelled() else task.exception()
    if task.cancelled() or isinstance(error, ConnectionError) or client_gone(request):
        return response  # the client is gone: nothing more to write
    if error is not None:
        log.error(
            "[host] the agent's stream for %s raised (%s: %s); closing the response",
            request.raw_path,
            type(error).__name__,
            error,
        )
        abort_connection(request)
        return response
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
