"""Driving one snippet through Monty: nested calls pause the sandbox, the host runs them.

Monty announces every call of a name the snippet does not define as a snapshot; the host looks
the name up in the catalog, runs the tool and resumes the sandbox with its value, or with a
``RuntimeError`` carrying the tool's error text (raised at the call site, so the snippet can catch
it). A call that is awaited, or handed to ``asyncio.gather``, is answered with a future instead:
the tool runs as a task while the sandbox goes on, and the futures are settled as the tasks
finish, so gathered calls run concurrently. Which calls those are is read from the snippet's
syntax tree (an ``await`` right around the call, or an argument of ``gather``, also inside a
list, tuple, ``*`` or comprehension); Monty's own ``allow_eager_await`` marks the others it
knows of.

Each snippet may reserve ``max_nested_calls`` calls, before they are scheduled (a ``gather`` of
more fails as a whole). The time the sandbox itself runs is measured (waiting for tools is not).
"""

from __future__ import annotations

import ast
import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastagent_cli import telemetry

__all__ = ["CallLog", "Snippet", "future_call_offsets"]

Call = Callable[[tuple[Any, ...], dict[str, Any]], Awaitable[Any]]
"""A function the sandbox can call: ``(args, kwargs) -> value``; raises what the call site sees."""

_TRANSPARENT = (ast.Starred, ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)


def _is_gather(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Name) and func.id == "gather") or (
        isinstance(func, ast.Attribute) and func.attr == "gather"
    )


def future_call_offsets(code: str) -> set[int]:
    """Byte offsets (into the UTF-8 code) of the calls that must be answered with a future."""
    try:
        tree = ast.parse(code, mode="exec", feature_version=(3, 11))
    except SyntaxError:
        return set()
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    starts = [0]
    for line in code.encode("utf-8").splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    found: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        parent = parents.get(node)
        inner: ast.AST = node
        while isinstance(parent, _TRANSPARENT) and not (
            isinstance(parent, ast.ListComp | ast.GeneratorExp) and inner is not parent.elt
        ):
            inner, parent = parent, parents.get(parent)
        if isinstance(parent, ast.Await) or (
            isinstance(parent, ast.Call) and _is_gather(parent) and inner in parent.args
        ):
            found.add(starts[node.lineno - 1] + node.col_offset)
    return found


@dataclass(slots=True)
class CallLog:
    """The nested calls of one snippet, for the result's details and progress."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    def lines(self) -> str:
        return "\n".join(f"{'✗' if c['isError'] else '✓'} {c['tool']} ({c['ms']:.0f} ms)" for c in self.calls)


class _Budget(RuntimeError):
    pass


@dataclass(slots=True)
class Snippet:
    """One ``run_code`` call's feed: drive it with :meth:`run`."""

    code: str
    functions: Mapping[str, Call]
    max_calls: int
    on_call: Callable[[CallLog], None] | None = None
    log: CallLog = field(default_factory=CallLog)
    sandbox_s: float = 0.0
    reserved: int = 0
    _pending: dict[int, asyncio.Task[Any]] = field(default_factory=dict)

    async def _timed(self, step: Awaitable[Any]) -> Any:
        started = time.monotonic()
        try:
            return await step
        finally:
            self.sandbox_s += time.monotonic() - started

    async def run(self, session: Any, print_callback: Any, monty: Any) -> Any:
        """The snippet's last value; raises Monty's errors (and cancels pending calls on any exit)."""
        futures = future_call_offsets(self.code)
        try:
            snap = await self._timed(session.feed_start(self.code, print_callback=print_callback))
            while not isinstance(snap, monty.MontyComplete):
                if isinstance(snap, monty.AsyncFunctionSnapshot):
                    snap = await self._call(snap, futures)
                elif isinstance(snap, monty.AsyncFutureSnapshot):
                    snap = await self._timed(snap.resume(await self._settle(snap.pending_call_ids)))
                elif isinstance(snap, monty.AsyncNameLookupSnapshot):
                    snap = await self._timed(snap.resume())  # undefined: NameError in the sandbox
                else:  # pragma: no cover - a snapshot kind this version does not know
                    raise RuntimeError(f"unexpected sandbox state {type(snap).__name__}")
            return snap.output
        finally:
            for task in self._pending.values():
                task.cancel()

    async def _call(self, snap: Any, futures: set[int]) -> Any:
        name = snap.function_name
        if snap.is_os_function:
            return await self._timed(snap.resume_not_handled())
        call = self.functions.get(name)
        if call is None:
            return await self._timed(snap.resume({"exception": NameError(f"name '{name}' is not defined")}))
        if self.reserved >= self.max_calls:
            message = (
                f"a run_code snippet may call functions at most {self.max_calls} times: call fewer "
                "(filter the inputs first) or split the work across several run_code calls"
            )
            return await self._timed(snap.resume({"exception": _Budget(message)}))
        self.reserved += 1
        invocation = self._invoke(name, call, tuple(snap.args), dict(snap.kwargs))
        if snap.allow_eager_await or snap.position.start in futures:
            self._pending[snap.call_id] = asyncio.ensure_future(invocation)
            return await self._timed(snap.resume({"future": ...}))
        return await self._timed(snap.resume(await _outcome(invocation)))

    async def _invoke(self, name: str, call: Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        started = time.monotonic()
        entry: dict[str, Any] = {"tool": name, "args": kwargs, "isError": False, "ms": 0.0}
        try:
            with telemetry.span(
                f"execute_tool {name}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "fastagent.code_mode": True,
                },
            ):
                return await call(args, kwargs)
        except Exception:
            entry["isError"] = True
            raise
        finally:
            entry["ms"] = (time.monotonic() - started) * 1000
            self.log.calls.append(entry)
            if self.on_call is not None:
                self.on_call(self.log)

    async def _settle(self, ids: list[int]) -> dict[int, dict[str, Any]]:
        waiting = [self._pending[i] for i in ids if i in self._pending]
        if waiting:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        settled: dict[int, dict[str, Any]] = {}
        for call_id in ids:
            task = self._pending.get(call_id)
            if task is not None and task.done():
                del self._pending[call_id]
                settled[call_id] = await _outcome(task)
        return settled


async def _outcome(step: Awaitable[Any]) -> dict[str, Any]:
    try:
        return {"return_value": await step}
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return {"exception": exc}
