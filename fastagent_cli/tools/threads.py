"""The threads synchronous tools run on: their own pool, with an account of calls left running.

A sync ``@tool`` function runs on :data:`TOOL_THREADS`, a pool of its own (never the event loop's
default executor, which session reads and the rest of the process share), sized for tools that
wait on networks and disks.

Python cannot stop a thread. When the turn running a sync tool is cancelled (the client left, the
tool's timeout expired), the call is *abandoned*: the turn moves on at once, but the function keeps
its thread until it returns. Each abandonment is logged as a warning naming the tool and how many
threads abandoned calls now hold; the return is logged too. A new call when every thread is held
by an abandoned one fails at once with an error saying so, instead of queueing behind them.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

__all__ = ["TOOL_THREADS", "ToolThreads", "ToolThreadsExhausted"]

log = logging.getLogger("fastagent.agent")


class ToolThreadsExhausted(RuntimeError):
    """Every tool thread is held by an abandoned call (the message says which)."""


@dataclass(slots=True)
class _Call:
    name: str
    started: float = 0.0
    running: bool = False
    done: bool = False
    abandoned: bool = False


class ToolThreads:
    def __init__(self, max_workers: int = 64) -> None:
        self.max_workers = max_workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._abandoned: dict[int, _Call] = {}

    @property
    def abandoned(self) -> list[str]:
        """Names of the abandoned calls still holding a thread."""
        with self._lock:
            return [call.name for call in self._abandoned.values()]

    async def run(self, name: str, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        """``fn(**kwargs)`` on a tool thread (with the caller's context variables)."""
        held = self.abandoned
        if len(held) >= self.max_workers:
            raise ToolThreadsExhausted(
                f"no tool thread is free: all {self.max_workers} are held by cancelled calls that are "
                f"still running ({_summary(held)}); the tool was not run"
            )
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix="fastagent-tool")
        call = _Call(name)
        context = contextvars.copy_context()
        work = functools.partial(self._call, call, context.run, fn, kwargs)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, work)
        except asyncio.CancelledError:
            self._abandon(call)
            raise

    def _call(
        self, call: _Call, run: Callable[..., Any], fn: Callable[..., Any], kwargs: dict[str, Any]
    ) -> Any:
        with self._lock:
            if call.abandoned:
                return None  # the caller left before a thread picked the call up: do not start it
            call.running, call.started = True, time.monotonic()
        try:
            return run(fn, **kwargs)
        finally:
            with self._lock:
                call.done = True
                was_abandoned = self._abandoned.pop(id(call), None) is not None
            if was_abandoned:
                log.info(
                    "[agent] abandoned tool call %s returned after %.1f s; its thread is free again",
                    call.name,
                    time.monotonic() - call.started,
                )

    def _abandon(self, call: _Call) -> None:
        with self._lock:
            call.abandoned = True
            if not call.running or call.done:
                return  # never started (and now never will) or already finished
            self._abandoned[id(call)] = call
            held = [c.name for c in self._abandoned.values()]
        log.warning(
            "[agent] tool %s was cancelled after %.1f s but a sync function cannot be stopped: it keeps "
            "its thread until it returns (%d of %d tool threads held by abandoned calls: %s)",
            call.name,
            time.monotonic() - call.started,
            len(held),
            self.max_workers,
            _summary(held),
        )


def _summary(names: list[str]) -> str:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in sorted(counts.items()))


TOOL_THREADS = ToolThreads()
"""The process's tool threads (64; a thread is only created when needed)."""
