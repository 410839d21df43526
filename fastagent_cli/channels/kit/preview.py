"""Live-preview pieces shared by the chat channels (feature K17).

* :class:`TurnView` and :func:`apply_event`: the one reducer from Agent events to what a preview
  shows (reasoning tail, one line per tool call with its status, a retry notice, the answer);
* :func:`humanize_tool_name` / :func:`summarize_tool_args`: ``mcp__github__create_issue`` reads
  "Github: create issue"; arguments are summarised in at most :data:`TOOL_ARG_MAX` characters,
  names in :data:`TOOL_NAME_MAX`;
* :class:`PreviewPump`: the single writer that repaints the preview to the latest view with at
  most one write in flight and at most one write per ``throttle_s``, so frames never land out of
  order and the platform's edit limit is respected.

Delivery (message edits, cards, streams) stays with each platform.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fastagent_cli.channels.kit.invoke import truncate
from fastagent_cli.contract import AgentEvent, Retrying, Text, Thinking, ToolEnded, ToolStarted

__all__ = [
    "RETRY_NOTICE",
    "THINKING_PLACEHOLDER",
    "TOOL_ARG_MAX",
    "TOOL_NAME_MAX",
    "PreviewPump",
    "TurnView",
    "apply_event",
    "compose",
    "humanize_tool_name",
    "progress",
    "revealed_answer",
    "summarize_tool_args",
    "thinking_line",
    "tool_lines",
]

THINKING_PLACEHOLDER = "💭 Thinking…"
RETRY_NOTICE = "⏳ Temporary problem — retrying…"
TOOL_ARG_MAX = 48
TOOL_NAME_MAX = 80
_MARKS = {"running": "…", "ok": "✓", "error": "✗"}
_MCP = re.compile(r"^mcp__(.+?)__(.+)$")


@dataclass(slots=True)
class _ToolLine:
    label: str
    status: str = "running"


@dataclass(slots=True)
class TurnView:
    """What one in-flight turn has shown so far."""

    thinking: str = ""
    answer: str = ""
    answer_since: float | None = None
    """When the first non-blank answer text arrived (monotonic seconds)."""
    retrying: bool = False
    tools: list[_ToolLine] = field(default_factory=list)
    _by_id: dict[str, _ToolLine] = field(default_factory=dict)


def apply_event(view: TurnView, event: AgentEvent) -> bool:
    """Fold one event into the view; ``True`` when what a preview shows may have changed. Any
    progress closes an open retry notice; terminal events are the caller's business."""
    closed_retry = view.retrying and not isinstance(event, Retrying)
    if closed_retry:
        view.retrying = False
    if isinstance(event, Text):
        view.answer += event.delta
        if view.answer_since is None and view.answer.strip():
            view.answer_since = time.monotonic()
        return True
    if isinstance(event, Thinking):
        view.thinking += event.delta
        return True
    if isinstance(event, ToolStarted):
        summary = summarize_tool_args(event.args)
        name = humanize_tool_name(event.name)
        line = _ToolLine(f"{name} {summary}" if summary else name)
        view.tools.append(line)
        view._by_id[event.id] = line
        return True
    if isinstance(event, ToolEnded):
        found = view._by_id.get(event.id)
        if found is not None:
            found.status = "error" if event.is_error else "ok"
        return True
    if isinstance(event, Retrying):
        view.retrying = True
        return True
    return closed_retry


def tool_lines(view: TurnView) -> str:
    return "\n".join(f"🔧 {line.label} {_MARKS[line.status]}" for line in view.tools)


def thinking_line(view: TurnView, max_tail: int) -> str:
    """The most recent tail of the reasoning, on one line (process, never the answer)."""
    flat = " ".join(view.thinking.split())
    if not flat:
        return ""
    return "💭 " + (flat if len(flat) <= max_tail else "…" + flat[-(max_tail - 1) :])


def revealed_answer(view: TurnView, age_s: float) -> str:
    """The answer once its first text is ``age_s`` old: a short reply is never shown as a flicker
    of its first characters, only as the final answer."""
    if view.answer_since is None or time.monotonic() - view.answer_since < age_s:
        return ""
    return view.answer


def compose(*parts: str) -> str:
    """Blank-line-joined non-empty parts."""
    return "\n\n".join(part for part in parts if part.strip()).strip()


def progress(view: TurnView, head: str, *rest: str) -> str:
    """What a preview shows of a turn in progress: ``head`` (the thinking tail, or a placeholder),
    one line per tool call, the retry notice while a retry is on, then ``rest`` (the answer so far)."""
    return compose(head, tool_lines(view), RETRY_NOTICE if view.retrying else "", *rest)


def humanize_tool_name(name: str) -> str:
    """``mcp__server__tool`` -> ``Server: tool``; other names with separators as spaces and the
    first letter capitalised; at most :data:`TOOL_NAME_MAX` characters."""

    def normal(text: str) -> str:
        return " ".join(re.sub(r"[_\-.]+", " ", text).split())

    found = _MCP.match(name)
    label = f"{normal(found.group(1))}: {normal(found.group(2))}" if found else normal(name)
    label = label.strip() or name.strip() or "Tool"
    return truncate(label[0].upper() + label[1:], TOOL_NAME_MAX)


def summarize_tool_args(args: Any) -> str:
    """The salient argument (the first string or number: a path, a command, a query), else compact
    JSON, on one line of at most :data:`TOOL_ARG_MAX` characters."""
    if isinstance(args, dict):
        primary = next(
            (v for v in args.values() if isinstance(v, str | int | float) and not isinstance(v, bool)), None
        )
        if primary is not None:
            return _clip(str(primary))
        return _clip(json.dumps(args, ensure_ascii=False, separators=(",", ":"))) if args else ""
    if args is None:
        return ""
    return _clip(args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))


def _clip(text: str) -> str:
    return truncate(" ".join(text.split()), TOOL_ARG_MAX)


class PreviewPump:
    """Repaint a preview through ``flush`` (which renders the latest view), one write at a time,
    at most one write per ``throttle_s``. The first failing flush is reported to ``on_error``;
    the pump keeps going (the final write is the authoritative one)."""

    def __init__(
        self,
        flush: Callable[[], Awaitable[None]],
        *,
        throttle_s: float,
        on_error: Callable[[BaseException], None],
    ) -> None:
        self._flush = flush
        self._throttle_s = throttle_s
        self._on_error = on_error
        self._dirty = False
        self._stopped = False
        self._errored = False
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._last_write = float("-inf")

    def touch(self) -> None:
        """The view changed: make sure a repaint happens (never waits for the network)."""
        if self._stopped:
            return
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        while self._dirty and not self._stopped:
            wait = self._last_write + self._throttle_s - time.monotonic()
            if wait > 0:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
                if self.stopped:
                    return
            self._dirty = False
            self._last_write = time.monotonic()
            try:
                await self._flush()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not self._errored:
                    self._errored = True
                    self._on_error(exc)

    @property
    def stopped(self) -> bool:
        return self._stopped

    async def finish(self) -> None:
        """Stop repainting and wait for a write in flight, so the caller's final write is last."""
        self._stopped = True
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task

    @property
    def last_write(self) -> float:
        """When the last write started (monotonic seconds; ``-inf`` before the first)."""
        return self._last_write
