"""Small helpers the coding tools share: argument validation, Node-style messages, blocking file
work off the event loop, and pi's per-file mutation queue."""

from __future__ import annotations

import asyncio
import errno
import functools
import math
import os
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pydantic

from fastagent_cli.tools.base import Execute, ToolContext, ToolResult, text_result
from fastagent_cli.tools.define import invalid_arguments_text

__all__ = [
    "ToolFailure",
    "failures_as_results",
    "file_mutation",
    "js_number",
    "node_error",
    "parse_args",
    "run_blocking",
    "well_formed",
]

M = TypeVar("M", bound=pydantic.BaseModel)
T = TypeVar("T")


class ToolFailure(Exception):
    """A tool's own failure: the message goes to the model as an error result."""


def failures_as_results(execute: Execute) -> Execute:
    """Let a tool raise :class:`ToolFailure`; the caller gets pi's message as an error result."""

    @functools.wraps(execute)
    async def wrapped(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return await execute(args, ctx)
        except ToolFailure as exc:
            return text_result(str(exc), is_error=True)

    return wrapped


def parse_args(model: type[M], args: Mapping[str, Any]) -> M | ToolResult:
    """The validated arguments, or an error result (never an exception) for the model."""
    try:
        return model.model_validate(dict(args))
    except pydantic.ValidationError as exc:
        return text_result(invalid_arguments_text(exc), is_error=True)


def js_number(value: float) -> str:
    """A number the way JavaScript prints it (``2`` not ``2.0``)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    return str(value)


_NODE_TEXT = {errno.EISDIR: "illegal operation on a directory"}


def node_error(exc: OSError, syscall: str, path: str) -> str:
    """An ``OSError`` as Node words it: ``ENOENT: no such file or directory, access '/x'``."""
    code = exc.errno if exc.errno is not None else 0
    name = errno.errorcode.get(code, "EIO")
    text = _NODE_TEXT.get(code) or (exc.strerror or os.strerror(code)).lower()
    return f"{name}: {text}, {syscall} '{path}'"


def well_formed(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD, as Node
    does when it encodes a string to UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """Run blocking file work in a thread. If the caller is cancelled meanwhile, the work still
    finishes (a thread cannot be stopped) before the cancellation goes on, so a file is never
    left half-written while its mutation lock is released."""
    future = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait({future})
        if not future.cancelled():
            future.exception()  # retrieved, so a failure is not reported as never retrieved
        raise


_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)
_users: dict[tuple[int, str], int] = {}


@asynccontextmanager
async def file_mutation(path: str) -> AsyncIterator[None]:
    """Serialise edits and writes to the same file (pi 0.61's file mutation queue)."""
    loop = asyncio.get_running_loop()
    key = path  # already absolute and normalised by resolve_to_cwd
    locks = _locks.setdefault(loop, {})
    lock = locks.setdefault(key, asyncio.Lock())
    slot = (id(loop), key)
    _users[slot] = _users.get(slot, 0) + 1
    try:
        async with lock:
            yield
    finally:
        _users[slot] -= 1
        if _users[slot] == 0:
            del _users[slot]
            locks.pop(key, None)
