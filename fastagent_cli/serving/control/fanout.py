"""A session's live events fanned out to its HTTP watchers (``GET /control/sessions/{id}/events``).

However many watchers a session has, the plane holds one subscription to it: a *channel*. The
channel's pump takes each burst of events (what is published within :data:`COALESCE_S` of its
first event), encodes it once per distinct ``seq`` (``seq`` counts from 0 per connection) and
sends the same bytes to every watcher: straight onto an idle connection, otherwise queued for the
watcher's own request task to write, so a slow client delays only itself. One task per plane
checks every watcher's connection each :data:`~fastagent_cli.serving.sse.DISCONNECT_POLL_S` and
sends the quiet ones their ``: ping`` every :data:`~fastagent_cli.serving.sse.PING_INTERVAL_S`. A
hundred watchers thus cost a write each per burst, not a subscription, a timer, a task switch and
an encoding each per event.

Joining is exact: a watcher receives every event published after it joined and none from before
(the events the channel took, plus those waiting in its subscription, are behind it). A watcher
whose client lets more than :data:`~fastagent_cli.control.SUBSCRIBER_BUFFER_CAP` events queue up is
ended, as a local subscriber that far behind is; deleting the session or stopping the agent ends
every watcher. An ended stream sends what it holds, then ends: the client resyncs from
``entries()``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiohttp import web

from fastagent_cli.control import (
    SUBSCRIBER_BUFFER_CAP,
    SessionCollection,
    SessionEvent,
    SessionEventsClosed,
    SessionEventStream,
    envelopes,
)
from fastagent_cli.serving import sse
from fastagent_cli.serving.control.plane import CORS_HEADERS

__all__ = ["COALESCE_S", "EventFanout"]

log = logging.getLogger("fastagent.control")

COALESCE_S = 0.04
"""Events published within this long after a burst's first go out together (a stream of text
deltas arrives in at most 25 writes a second per watcher)."""

_PING = b": ping\n\n"
_MESSAGE_BREAK = "\n\ndata: "
_INLINE_MAX = 16 * 1024
"""A burst up to this size goes straight to an idle watcher's connection (well under the 64 KiB at
which a transport pauses its writer), sparing a task switch per watcher."""


class _Watcher:
    """One ``/events`` connection: what is queued for it and whether it should end."""

    __slots__ = (
        "failed",
        "gone",
        "last_write",
        "outbox",
        "queued",
        "request",
        "response",
        "seq",
        "start",
        "waiter",
    )

    def __init__(self, request: web.BaseRequest, start: int, now: float) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None
        """Set once the headers are out."""
        self.start = start
        """The channel's count of events before this watcher's first."""
        self.seq = 0
        self.outbox: list[bytes] = []
        self.queued = 0
        """Events in :attr:`outbox` (pings are not counted)."""
        self.last_write = now
        self.waiter: asyncio.Future[None] | None = None
        self.gone = False
        """The client left: nothing more is written."""
        self.failed: bool | None = None
        """Set when the watcher is ended: True when its stream broke and the connection is cut."""

    def writable_now(self, size: int) -> bool:
        """Whether ``size`` bytes can be written at once without waiting: the writer idles on an
        empty queue and the connection's buffer is empty (a write this small cannot pause it)."""
        transport = self.request.transport
        return (
            self.response is not None
            and self.waiter is not None
            and not self.outbox
            and size <= _INLINE_MAX
            and transport is not None
            and not transport.is_closing()
            and transport.get_write_buffer_size() == 0
        )

    def queue(self, data: bytes) -> None:
        self.outbox.append(data)
        self.wake()

    def end(self, failed: bool = False) -> None:
        if self.failed is None:
            self.failed = failed
        self.wake()

    def wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Channel:
    """The plane's one subscription to one session, and the watchers it feeds."""

    def __init__(self, session: str, stream: SessionEventStream, epoch: str) -> None:
        self.session = session
        self.stream = stream
        self.epoch = epoch
        self.watchers: list[_Watcher] = []
        self.taken = 0
        """Events taken off the subscription so far."""
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pump: asyncio.Task[None] | None = None
        self.closed = False
        """No longer the session's channel: nothing more is delivered (a joiner opens another)."""

    def join(self, request: web.BaseRequest, now: float) -> _Watcher:
        watcher = _Watcher(request, self.taken + self.stream.pending, now)
        self.watchers.append(watcher)
        return watcher

    async def run(self, closed: Callable[[_Channel], None]) -> None:
        failed = False
        try:
            async with self.stream as stream:
                while True:
                    first = await anext(stream)
                    self.taken += 1
                    await asyncio.sleep(COALESCE_S)
                    rest = stream.drain()
                    self.taken += len(rest)
                    await self.deliver([first, *rest], self.taken - 1 - len(rest))
        except SessionEventsClosed:
            pass  # deleted, overflowed or the agent is stopping: the watchers' streams end
        except Exception as exc:
            log.error(
                "[control] the event stream of session %s failed (%s: %s)",
                self.session,
                type(exc).__name__,
                exc,
            )
            failed = True
        finally:
            closed(self)
            for watcher in self.watchers:
                watcher.end(failed)

    async def deliver(self, burst: list[SessionEvent], base: int) -> None:
        """Send ``burst`` (the channel's events from number ``base`` on) to every watcher, encoded
        once per distinct (first event, ``seq``): written at once to an idle connection, queued for
        the watcher's writer otherwise."""
        now = asyncio.get_running_loop().time()
        encoded: dict[tuple[int, int], bytes] = {}
        for watcher in list(self.watchers):  # one may leave while another's write returns
            if watcher.failed is not None:
                continue
            skip = max(0, watcher.start - base)
            if skip >= len(burst):
                continue
            count = len(burst) - skip
            if watcher.queued + count > SUBSCRIBER_BUFFER_CAP:
                log.warning(
                    "[control] a watcher of session %s is %d events behind: closing it (it resyncs "
                    "through entries())",
                    self.session,
                    SUBSCRIBER_BUFFER_CAP,
                )
                watcher.end()
                continue
            key = (skip, watcher.seq)
            data = encoded.get(key)
            if data is None:
                lines = envelopes(self.session, self.epoch, watcher.seq, burst[skip:])
                data = encoded[key] = f"data: {_MESSAGE_BREAK.join(lines)}\n\n".encode()
            watcher.seq += count
            if watcher.response is not None and watcher.writable_now(len(data)):
                try:
                    await watcher.response.write(data)  # returns at once: nothing to drain
                except ConnectionError:
                    watcher.gone = True
                    watcher.end()
                watcher.last_write = now
            else:
                watcher.queued += count
                watcher.queue(data)


class EventFanout:
    """The ``/events`` route's state for one plane: its channels and its connection checker."""

    def __init__(self, sessions: SessionCollection, epoch: str) -> None:
        self.sessions = sessions
        self.epoch = epoch
        self._channels: dict[str, _Channel] = {}
        self._checker: asyncio.Task[None] | None = None

    async def respond(self, request: web.BaseRequest, session: str) -> web.StreamResponse:
        """Stream ``session``'s events to ``request`` until the client leaves or the stream ends."""
        channel = await self._channel(session)
        loop = asyncio.get_running_loop()
        watcher = channel.join(request, loop.time())
        self._check_connections()
        try:
            response = web.StreamResponse(status=200, headers={**sse.SSE_HEADERS, **CORS_HEADERS})
            await response.prepare(request)
            try:
                await _write(watcher, response, loop)
            except ConnectionError:
                return response
            if watcher.failed:
                sse.abort_connection(request)
            elif not watcher.gone and not sse.client_gone(request):
                await response.write_eof()
            return response
        finally:
            self._leave(channel, watcher)

    async def _channel(self, session: str) -> _Channel:
        """The session's open channel; opened by this request when there is none (a request that
        waited for another's opening that was cancelled tries again; one that failed re-raises)."""
        while True:
            channel = self._channels.get(session)
            if channel is None:
                return await self._open(session)
            await asyncio.wait({channel.opened})
            if not channel.opened.cancelled():
                channel.opened.result()
                if not channel.closed:
                    return channel

    async def _open(self, session: str) -> _Channel:
        stream = self.sessions.get(session).events()
        channel = self._channels[session] = _Channel(session, stream, self.epoch)
        try:
            await stream.ready()  # subscribed before any headers go out: nothing after is missed
        except BaseException as exc:
            self._closed(channel)
            if isinstance(exc, asyncio.CancelledError):
                channel.opened.cancel()
            else:
                channel.opened.set_exception(exc)
                channel.opened.exception()  # retrieved: the requests waiting on it re-raise it
            await stream.aclose()
            raise
        channel.opened.set_result(None)
        channel.pump = asyncio.create_task(channel.run(self._closed))
        return channel

    def _closed(self, channel: _Channel) -> None:
        channel.closed = True
        if self._channels.get(channel.session) is channel:
            del self._channels[channel.session]
        if not self._channels and self._checker is not None:
            self._checker.cancel()
            self._checker = None

    def _leave(self, channel: _Channel, watcher: _Watcher) -> None:
        channel.watchers.remove(watcher)
        if not channel.watchers:
            self._closed(channel)
            if channel.pump is not None:
                channel.pump.cancel()

    def _check_connections(self) -> None:
        if self._checker is None or self._checker.done():
            self._checker = asyncio.create_task(self._check())

    async def _check(self) -> None:
        """Every poll: end the watchers whose client left, ping the quiet ones (cancelled when the
        last channel closes)."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(sse.DISCONNECT_POLL_S, sse.PING_INTERVAL_S))
            now = loop.time()
            for channel in list(self._channels.values()):
                for watcher in channel.watchers:
                    if sse.client_gone(watcher.request):
                        watcher.gone = True
                        watcher.end()
                    elif (
                        watcher.failed is None
                        and not watcher.outbox
                        and now - watcher.last_write >= sse.PING_INTERVAL_S
                    ):
                        watcher.last_write = now
                        watcher.queue(_PING)


async def _write(watcher: _Watcher, response: web.StreamResponse, loop: asyncio.AbstractEventLoop) -> None:
    """Write what is queued for ``watcher`` as it comes, until it is ended and its queue empty."""
    watcher.response = response
    while not watcher.gone:
        if watcher.outbox:
            data = watcher.outbox[0] if len(watcher.outbox) == 1 else b"".join(watcher.outbox)
            watcher.outbox.clear()
            watcher.queued = 0
            await response.write(data)
            watcher.last_write = loop.time()
        elif watcher.failed is not None:
            return
        else:
            watcher.waiter = loop.create_future()
            try:
                await watcher.waiter
            finally:
                watcher.waiter = None
