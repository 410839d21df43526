"""An elapsed counter on stderr while ``invoke`` waits for the model's first token.

Only when stderr is a terminal, and only once the wait is longer than a blink (``DELAY_S``):
``⠹ waiting for openai/gpt-5 … 4s`` on one line, rewritten in place ten times a second and erased
(``\\r`` + erase-line) before anything else is printed. Nothing goes to stdout, and nothing at all
when stderr is a pipe or a file, so scripts and logs see exactly what they saw before.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import TextIO

__all__ = ["DELAY_S", "FirstTokenProgress"]

DELAY_S = 0.5
_TICK_S = 0.1
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ERASE = "\r\x1b[K"


class FirstTokenProgress:
    """``start()`` when the request goes out, ``stop()`` before printing anything (idempotent)."""

    def __init__(self, what: str, stream: TextIO | None = None) -> None:
        self._what = what
        self._stream = stream or sys.stderr
        try:
            self._enabled = self._stream.isatty()
        except (AttributeError, ValueError):
            self._enabled = False
        self._task: asyncio.Task[None] | None = None
        self._shown = False

    def start(self) -> None:
        if self._enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(time.monotonic()))

    def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        if self._shown:
            self._shown = False
            with contextlib.suppress(OSError, ValueError):
                self._stream.write(_ERASE)
                self._stream.flush()

    async def _run(self, started: float) -> None:
        await asyncio.sleep(DELAY_S)
        frame = 0
        while True:
            elapsed = time.monotonic() - started
            try:
                self._stream.write(
                    f"{_ERASE}{_FRAMES[frame % len(_FRAMES)]} waiting for {self._what} … {elapsed:.0f}s"
                )
                self._stream.flush()
            except (OSError, ValueError):
                return
            self._shown = True
            frame += 1
            await asyncio.sleep(_TICK_S)
