"""Running long-connection channels: connect, watch, stop.

A long-connection channel (a WebSocket bot, a poller) is ``{name, connect(ctx, stop)}``;
``connect`` returns ``{ready, closed}`` awaitables (it may also be ``async``):

* ``ready`` settles on the first usable connection (or when ``stop`` is set before that);
* ``closed`` resolves after a ``stop``-driven shutdown, and raises on a terminal failure;
* ``stop`` (an :class:`asyncio.Event`) is the only shutdown command; the adapter owns reconnects.

:class:`LongConnections` starts them all, exposes one ``ready`` future (rejects with
:class:`~fastagent_cli.errors.ServeError` if one fails first) and :meth:`~LongConnections.is_ready`
for ``/health``, reports a connection that closes while nobody asked it to through
``on_closed(name, error)`` (so the process can fail visibly), and stops them within a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastagent_cli.errors import ServeError, one_line
from fastagent_cli.serving.channels import ChannelContext, LongConnectionChannel

__all__ = ["STOP_TIMEOUT_S", "CloseCallback", "LongConnections"]

log = logging.getLogger("fastagent.channel")

STOP_TIMEOUT_S = 5.0

CloseCallback = Callable[[str, BaseException | None], None]
"""``on_closed(name, error)``: a long connection closed unexpectedly (``error`` is ``None`` when
``closed`` resolved cleanly without a stop)."""


@dataclass(slots=True)
class _Running:
    name: str
    file: str
    stop: asyncio.Event
    ready: asyncio.Future[Any]
    closed: asyncio.Future[Any]
    reported: bool = False
    """It closed before any stop (already reported through ``on_closed``)."""


class LongConnections:
    def __init__(
        self,
        channels: Sequence[tuple[str, LongConnectionChannel]],
        ctx: ChannelContext,
        on_closed: CloseCallback | None = None,
    ) -> None:
        self._channels = list(channels)
        self._ctx = ctx
        self._on_closed = on_closed
        self._running: list[_Running] = []
        self._stopping = False
        self._watcher: asyncio.Future[None] | None = None
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Resolves once every connection is ready; raises ServeError if one fails first."""
        self.ready.add_done_callback(_retrieve)

    @property
    def names(self) -> list[str]:
        return [channel.name for _, channel in self._channels]

    def is_ready(self) -> bool:
        return self.ready.done() and not self.ready.cancelled() and self.ready.exception() is None

    async def start(self) -> None:
        """Connect every channel. A ``connect`` that raises stops the ones already started and
        raises ServeError naming the channel."""
        for file, channel in self._channels:
            stop = asyncio.Event()
            try:
                connection: Any = channel.connect(self._ctx, stop)
                if inspect.isawaitable(connection) and not hasattr(connection, "ready"):
                    connection = await connection
                ready_aw, closed_aw = _awaitables(connection)
            except Exception as exc:
                with contextlib.suppress(ServeError):
                    await self.stop()
                raise ServeError(
                    f"long connection {channel.name} ({file}) failed to connect: {_text(exc)}"
                ) from None
            ready = asyncio.ensure_future(ready_aw)
            closed = asyncio.ensure_future(closed_aw)
            running = _Running(channel.name, file, stop, ready, closed)
            ready.add_done_callback(_retrieve)
            closed.add_done_callback(self._closed_callback(running))
            self._running.append(running)
            log.info("[channel] %s connecting (%s)", channel.name, file)
        self._watcher = asyncio.ensure_future(self._wait_ready())
        self._watcher.add_done_callback(_retrieve)

    async def _wait_ready(self) -> None:
        try:
            for running in self._running:
                await asyncio.wait({running.ready, running.closed}, return_when=asyncio.FIRST_COMPLETED)
                if not running.ready.done() or running.ready.cancelled() or running.ready.exception():
                    error = _failure(running.ready if running.ready.done() else running.closed)
                    raise ServeError(f"long connection {running.name} failed before it was ready: {error}")
                log.info("[channel] %s ready", running.name)
        except ServeError as exc:
            if not self.ready.done():
                self.ready.set_exception(exc)
            return
        if not self.ready.done():
            self.ready.set_result(None)

    def _closed_callback(self, running: _Running) -> Callable[[asyncio.Future[Any]], None]:
        return lambda _future: self._closed(running)

    def _closed(self, running: _Running) -> None:
        if self._stopping:
            return
        running.reported = True
        error = None if running.closed.cancelled() else running.closed.exception()
        log.error(
            "[channel] long connection %s closed unexpectedly%s",
            running.name,
            f": {_text(error)}" if error is not None else "",
        )
        if self._on_closed is not None:
            self._on_closed(running.name, error)

    async def stop(self, within: float = STOP_TIMEOUT_S) -> None:
        """Set every ``stop`` and wait for ``closed``; ServeError if one fails or overruns."""
        self._stopping = True
        for running in self._running:
            running.stop.set()
        pending = {r.closed for r in self._running if not r.closed.done()}
        if pending:
            await asyncio.wait(pending, timeout=within)
        problems: list[str] = []
        for running in self._running:
            if not running.ready.done():
                running.ready.cancel()
            if not running.closed.done():
                running.closed.cancel()
                problems.append(f"{running.name} did not stop within {within:g} s")
            elif running.reported or running.closed.cancelled():
                continue
            elif running.closed.exception() is not None:
                problems.append(f"{running.name} failed while stopping: {_text(running.closed.exception())}")
        if not self.ready.done():
            self.ready.cancel()
        if self._watcher is not None and not self._watcher.done():
            self._watcher.cancel()
        if problems:
            raise ServeError("long connections: " + "; ".join(problems))


def _awaitables(connection: Any) -> tuple[Awaitable[Any], Awaitable[Any]]:
    ready = getattr(connection, "ready", None)
    closed = getattr(connection, "closed", None)
    if inspect.isawaitable(ready) and inspect.isawaitable(closed):
        return ready, closed
    for value in (ready, closed):
        if inspect.iscoroutine(value):
            value.close()  # never awaited: close it so it does not warn
    raise TypeError("connect() must return an object with awaitable `ready` and `closed`")


def _failure(future: asyncio.Future[Any]) -> str:
    if future.cancelled():
        return "cancelled"
    error = future.exception()
    return _text(error) if error is not None else "closed"


def _text(exc: BaseException | None) -> str:
    return one_line(f"{type(exc).__name__}: {exc}", 300) if exc is not None else "no error"


def _retrieve(future: asyncio.Future[Any]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        future.exception()  # mark retrieved: failures are reported through ready / on_closed
