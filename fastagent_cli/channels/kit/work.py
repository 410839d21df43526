"""The process-wide in-flight work counter (feature K18).

Channels acknowledge a webhook at once and run the turn afterwards, so open HTTP requests do not
show whether the process is busy. Every post-acknowledgement turn calls :func:`begin_work` when it
is accepted and the returned callback when it settles; :func:`active_work` is the number still in
flight (what a host's busy probe or a graceful-shutdown report reads). :func:`cancel_all` is how
a channel ends its background work on close.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["active_work", "begin_work", "cancel_all"]

_in_flight = 0


def begin_work() -> Callable[[], None]:
    """Count one unit of work; call the result when it ends (calling it again does nothing)."""
    global _in_flight
    _in_flight += 1
    done = False

    def finish() -> None:
        global _in_flight
        nonlocal done
        if not done:
            done = True
            _in_flight -= 1

    return finish


def active_work() -> int:
    """Units of channel work in flight in this process (0: idle)."""
    return _in_flight


async def cancel_all(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has settled (whatever it raised)."""
    pending = list(tasks)
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(BaseException):
            await task
