"""Relay an event stream as Server-Sent Events, and stop the stream's producer when the client leaves.

Each event is one ``data: <json>\\n\\n`` message; a ``: ping\\n\\n`` comment goes out every
:data:`PING_INTERVAL_S` so remote consumers can tell a quiet run from a dead connection.

Two tasks per stream: a *reader* pulls events and writes them (so a slow client applies
backpressure to the agent), and the request's own task *watches*: it pings, and it notices a
client that went away even while the agent is silent (a slow tool), by the write failing or by
polling the transport every :data:`DISCONNECT_POLL_S`. Either way the reader is cancelled, which
closes the agent's stream (:func:`~fastagent_cli.contract.closing`), which aborts the turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from aiohttp import web

from fastagent_cli.contract import closing, event_to_wire

__all__ = ["DISCONNECT_POLL_S", "PING_INTERVAL_S", "SSE_HEADERS", "client_gone", "stream_events"]

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

_PING = b": ping\n\n"


def client_gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


class _Reader:
    def __init__(
        self, response: web.StreamResponse, events: AsyncIterator[Any], encode: Callable[[Any], str]
    ) -> None:
        self.response = response
        self.events = events
        self.encode = encode
        self.writing = False

    async def run(self) -> None:
        async with closing(self.events) as events:
            async for event in events:
                self.writing = True
                try:
                    await self.response.write(f"data: {self.encode(event)}\n\n".encode())
                finally:
                    self.writing = False


async def stream_events(
    request: web.BaseRequest,
    events: AsyncIterator[Any],
    *,
    encode: Callable[[Any], str] = event_to_wire,
    headers: Mapping[str, str] | None = None,
) -> web.StreamResponse:
    """Answer ``request`` with ``events`` as SSE (200), each item one ``data:`` line of
    ``encode(item)`` (an ``AgentEvent``'s JSON by default) and ``headers`` added to the SSE ones.
    Returns when the stream ends or the client leaves; the stream is closed in every case."""
    response = web.StreamResponse(status=200, headers={**SSE_HEADERS, **(headers or {})})
    try:
        await response.prepare(request)
    except BaseException:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
        raise
    reader = _Reader(response, events, encode)
    task = asyncio.create_task(reader.run())
    # However this handler ends (it may itself be cancelled mid-cleanup when the client leaves), a
    # reader that failed writing to a closed connection is never "Task exception was never
    # retrieved" in the log.
    task.add_done_callback(_retrieve)
    try:
        await _watch(request, response, reader, task)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieve it now: the handler may be cancelled before _finish looks
    return await _finish(request, response, task)


async def _watch(
    request: web.BaseRequest, response: web.StreamResponse, reader: _Reader, task: asyncio.Task[None]
) -> None:
    loop = asyncio.get_running_loop()
    next_ping = loop.time() + PING_INTERVAL_S
    while True:
        delay = max(0.0, min(DISCONNECT_POLL_S, next_ping - loop.time()))
        done, _ = await asyncio.wait({task}, timeout=delay)
        if done:
            return
        if client_gone(request):
            log.debug("[host] client left %s mid-stream; cancelling the turn", request.raw_path)
            return
        if loop.time() >= next_ping:
            next_ping = loop.time() + PING_INTERVAL_S
            if not reader.writing:
                try:
                    await response.write(_PING)
                except ConnectionError:
                    return


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
