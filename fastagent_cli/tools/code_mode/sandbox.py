"""The Monty sandbox: the agent's worker pool and each run's REPL session.

``pydantic-monty`` is imported here only, and only when a ``run_code`` call needs it. Code runs
in worker subprocesses (the pool), so nothing a snippet does can take the host down: a crashed or
killed worker is an error text for the model and a fresh sandbox next time.

A run's session lives until the run ends or ``restart: true``. Its limits (``[code_mode]``):
sandbox time per run (its snippets share it; each snippet is also stopped inside the worker at
that length), heap, suspensions, nested calls per snippet, captured print output. Hitting the
time or memory limit, or a worker crash, resets the session (Monty gives no guarantee about a
heap a limit interrupted); a syntax error or an exception leaves it as it was.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from fastagent_cli.tools.base import ToolResult, text_result
from fastagent_cli.tools.code_mode.driver import Call, CallLog, Snippet
from fastagent_cli.tools.code_mode.helpers import HELPERS_SOURCE
from fastagent_cli.tools.code_mode.settings import CodeModeSettings

__all__ = ["MontyPool", "RunSandbox", "monty_problem"]

_PIN = "pydantic-monty==1.4.*"
_RESET = "The sandbox was reset: variables, functions and imports from earlier snippets are gone."


def _worker_binary() -> str | None:
    """The ``monty`` worker a binary build ships next to its own files (``None``: not frozen)."""
    base = getattr(sys, "_MEIPASS", None)
    if not getattr(sys, "frozen", False) or base is None:
        return None
    return str(Path(base) / "monty")


def monty_problem() -> str | None:
    """Why code mode cannot run here (``None``: it can)."""
    try:
        from pydantic_monty._binary import find_monty_binary
    except ImportError:
        if getattr(sys, "frozen", False):
            return "this fastagent binary was built without the code mode sandbox (pydantic-monty)"
        return f"code mode needs pydantic-monty: pip install 'fastagent-cli[code-mode]' ({_PIN})"
    bundled = _worker_binary()
    if bundled is not None:
        return None if os.access(bundled, os.X_OK) else f"the sandbox worker {bundled} is missing"
    try:
        find_monty_binary()
    except FileNotFoundError:
        return "code mode cannot find the monty worker binary (reinstall pydantic-monty, or set MONTY_BIN)"
    return None


def _monty() -> ModuleType:
    import pydantic_monty

    module: ModuleType = pydantic_monty
    return module


class MontyPool:
    """The agent's worker pool, started on the first ``run_code`` and closed with the agent."""

    def __init__(self, settings: CodeModeSettings) -> None:
        self.settings = settings
        self._pool: Any = None
        self._lock = asyncio.Lock()

    async def checkout(self) -> tuple[Any, Any]:
        """A fresh REPL session: ``(its context manager, the session)``."""
        monty = _monty()
        async with self._lock:
            if self._pool is None:
                pool = monty.AsyncMonty(
                    binary_path=_worker_binary(),
                    max_processes=32,
                    checkout_timeout=60,
                    request_timeout=self.settings.time_limit + 30,  # a backstop: kills a stuck worker
                )
                await pool.__aenter__()
                self._pool = pool
        settings = self.settings
        limits = {
            "max_feed_duration_secs": settings.time_limit,
            "max_memory": settings.memory_mb * 1024 * 1024,
            "max_suspensions": settings.max_suspensions,
        }
        manager = self._pool.checkout(script_name="run_code.py", limits=limits)
        session = await manager.__aenter__()
        return manager, session

    async def aclose(self) -> None:
        async with self._lock:
            pool, self._pool = self._pool, None
            if pool is None:
                return
            try:
                await pool.__aexit__(None, None, None)
            finally:
                del pool
                # The extension's objects must be gone before the interpreter finalises (left to
                # interpreter shutdown they can abort the process): collect them now.
                gc.collect()
                await asyncio.sleep(0.02)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    return repr(value)


def _render(value: Any, printed: str) -> str:
    if printed:
        payload: dict[str, Any] = {"output": printed}
        if value is not None:
            payload["result"] = _jsonable(value)
        return json.dumps(payload, ensure_ascii=False)
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(_jsonable(value), ensure_ascii=False)


class RunSandbox:
    """One run's REPL session (see the module doc)."""

    def __init__(self, pool: MontyPool) -> None:
        self.pool = pool
        self.settings = pool.settings
        self.used_s = 0.0
        self._manager: Any = None
        self._session: Any = None

    async def _reset(self) -> None:
        manager, self._manager, self._session = self._manager, None, None
        self.used_s = 0.0
        if manager is not None:
            await asyncio.shield(manager.__aexit__(None, None, None))

    async def aclose(self) -> None:
        await self._reset()

    async def execute(
        self,
        code: str,
        functions: Mapping[str, Call],
        *,
        restart: bool = False,
        on_call: Callable[[CallLog], None] | None = None,
    ) -> ToolResult:
        settings = self.settings
        if restart:
            await self._reset()
        if self.used_s >= settings.time_limit:
            return text_result(
                f"The sandbox's time budget ({settings.time_limit:g} s per run) is spent: call run_code "
                "with restart: true to start a fresh sandbox.",
                is_error=True,
            )
        monty = _monty()
        collector = monty.CollectStreams(max_bytes=settings.print_limit_kb * 1024)
        snippet = Snippet(code, functions, settings.max_nested_calls, on_call)
        try:
            if self._session is None:
                self._manager, self._session = await self.pool.checkout()
                await self._session.feed_start(HELPERS_SOURCE)  # the helpers: see .helpers
            value = await snippet.run(self._session, collector, monty)
        except BaseException as exc:
            self.used_s += snippet.sandbox_s
            return await self._error(exc, snippet, monty)
        self.used_s += snippet.sandbox_s
        printed = "".join(text for _, text in collector.output)
        return ToolResult(
            [{"type": "text", "text": _render(value, printed)}],
            details={"calls": snippet.log.calls, "sandboxMs": round(snippet.sandbox_s * 1000, 1)},
        )

    async def _error(self, exc: BaseException, snippet: Snippet, monty: ModuleType) -> ToolResult:
        """The model's answer to a snippet that failed; the sandbox reset when it cannot go on."""
        if isinstance(exc, asyncio.CancelledError):
            await self._reset()  # the worker is mid-feed: it cannot be fed again
            raise exc
        if isinstance(exc, monty.MontySyntaxError):
            return self._failed(exc.display("type-msg"), snippet)
        if isinstance(exc, monty.MontyTypingError):
            return self._failed(exc.display(), snippet)
        if isinstance(exc, monty.MontyRuntimeError):
            kind = type(exc.exception()).__name__
            text = exc.display("traceback")
            if kind == "MemoryError" and self._print_cap_hit(text):
                return self._failed(
                    f"{text}\nThe snippet printed more than {self.settings.print_limit_kb} KiB, the "
                    "print capture limit: print less (return the data as the last expression, or a "
                    "summary of it).",
                    snippet,
                )
            if kind in ("TimeoutError", "MemoryError") and "limit exceeded" in text:
                await self._reset()
                limit = "time" if kind == "TimeoutError" else "memory"
                return self._failed(f"{text}\nThe sandbox hit its {limit} limit. {_RESET}", snippet)
            return self._failed(text, snippet)
        if isinstance(exc, monty.MontyCrashedError):
            await self._reset()
            why = "ran past its time limit and was stopped" if exc.timed_out else f"stopped ({exc})"
            return self._failed(f"The sandbox worker {why}. {_RESET}", snippet)
        raise exc

    def _print_cap_hit(self, text: str) -> bool:
        """Whether a ``MemoryError`` is the print capture's cap (Monty words it like the heap's)."""
        cap = self.settings.print_limit_kb * 1024
        return cap != self.settings.memory_mb * 1024 * 1024 and f"> {cap} bytes" in text

    @staticmethod
    def _failed(text: str, snippet: Snippet) -> ToolResult:
        calls = snippet.log.calls
        if calls:
            runs: list[list[Any]] = []  # consecutive calls of one tool with one outcome: one line
            for c in calls:
                if runs and runs[-1][:2] == [c["tool"], c["isError"]]:
                    runs[-1][2] += 1
                else:
                    runs.append([c["tool"], c["isError"], 1])
            made = "\n".join(
                f"- {tool}{' (failed)' if failed else ''}{f' ×{n}' if n > 1 else ''}"
                for tool, failed, n in runs
            )
            text += (
                f"\n{len(calls)} function call(s) ran before the error "
                f"(repeating them repeats their effects):\n{made}"
            )
        details = {"calls": calls, "sandboxMs": round(snippet.sandbox_s * 1000, 1)}
        return text_result(text, is_error=True, details=details)
