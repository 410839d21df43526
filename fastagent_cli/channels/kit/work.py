"""The process-wide in-flight work counter (feature K18).

Channels acknowledge a webhook at once and run the turn afterwards, so open HTTP requests do not
show whether the process is busy. Every post-acknowledgement turn calls :func:`begin_work` when it
is accepted and the returned callback when it settles; :func:`active_work` is the number still in
flight (what a host's busy probe or a graceful-shutdown report reads).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["active_work", "begin_work"]

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
