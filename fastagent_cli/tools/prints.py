"""What a tool prints: to stderr (the log), at most :data:`MAX_PRINT_BYTES` per call.

A Python tool runs in the serving process, so its ``print()`` would land on the process's stdout:
mixed into ``invoke --json``'s answer, and unbounded in a server's log (a loop printing every line
of a big file). While a call runs, :func:`tool_prints` marks its context (a context variable:
concurrent calls and the worker threads of synchronous tools each count their own); the stdout
proxy installed on first use sends what such a context writes to stderr, up to the cap, then one
line saying the rest was dropped. Writes from outside a tool call go to stdout as before.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TextIO

__all__ = ["MAX_PRINT_BYTES", "tool_prints"]

MAX_PRINT_BYTES = 16 * 1024


@dataclass(slots=True)
class _Budget:
    tool: str
    left: int
    dropped: bool = False


_current: ContextVar[_Budget | None] = ContextVar("fastagent_tool_prints", default=None)


class _ToolAwareStdout(io.TextIOBase):
    """``sys.stdout`` while tools may run: a tool call's writes go to stderr, capped."""

    def __init__(self, stdout: TextIO) -> None:
        self.stdout = stdout

    def write(self, text: str) -> int:
        budget = _current.get()
        if budget is None:
            return self.stdout.write(text)
        if budget.dropped:
            return len(text)
        data = text.encode("utf-8", "replace")
        err = sys.stderr
        if len(data) <= budget.left:
            budget.left -= len(data)
            err.write(text)
        else:
            kept = data[: budget.left].decode("utf-8", "ignore")
            budget.left = 0
            budget.dropped = True
            err.write(
                f"{kept}\n[tool] {budget.tool} printed more than {MAX_PRINT_BYTES // 1024} KiB in one call; "
                "the rest of its output is dropped\n"
            )
        return len(text)

    def flush(self) -> None:
        self.stdout.flush()
        with contextlib.suppress(Exception):
            sys.stderr.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.stdout.isatty()

    def fileno(self) -> int:
        return self.stdout.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stdout, "encoding", "utf-8")


def _install() -> None:
    if not isinstance(sys.stdout, _ToolAwareStdout) and sys.stdout is not None:
        sys.stdout = _ToolAwareStdout(sys.stdout)


@contextlib.contextmanager
def tool_prints(tool: str) -> Iterator[None]:
    """Within it (one tool call), prints go to stderr, at most :data:`MAX_PRINT_BYTES`."""
    _install()
    token = _current.set(_Budget(tool, MAX_PRINT_BYTES))
    try:
        yield
    finally:
        _current.reset(token)
