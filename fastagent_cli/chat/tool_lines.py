"""Tool calls as the chat shows them: one compact line each, numbered, output kept for ``/expand``.

A line reads ``✓ get_weather city=Paris  0.41s  #2``: status mark, name, argument summary (at
most :data:`ARGS_LIMIT` characters), duration, and the number ``/expand`` takes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fastagent_cli.contract import ToolEnded, ToolStarted

__all__ = [
    "ARGS_LIMIT",
    "ToolLog",
    "ToolRecord",
    "content_text",
    "format_duration",
    "plain_tool_line",
    "summarize_args",
]

ARGS_LIMIT = 48
Status = Literal["running", "ok", "error", "interrupted"]
MARKS: dict[Status, str] = {"running": "…", "ok": "✓", "error": "✗", "interrupted": "✗"}


@dataclass(slots=True)
class ToolRecord:
    index: int
    id: str
    name: str
    args: Any
    started: float
    ended: float | None = None
    status: Status = "running"
    content: Any = None

    def duration(self, now: float) -> float:
        return (self.ended if self.ended is not None else now) - self.started

    @property
    def summary(self) -> str:
        return summarize_args(self.args)


class ToolLog:
    """Every tool call of this chat, in start order (``/expand n`` is 1-based)."""

    def __init__(self) -> None:
        self.records: list[ToolRecord] = []
        self._by_id: dict[str, ToolRecord] = {}

    def start(self, event: ToolStarted, now: float) -> ToolRecord:
        record = ToolRecord(len(self.records) + 1, event.id, event.name, event.args, now)
        self.records.append(record)
        self._by_id[event.id] = record
        return record

    def end(self, event: ToolEnded, now: float) -> ToolRecord:
        record = self._by_id.get(event.id)
        if record is None:  # an end without a start (a relay dropped it): still show it
            record = self.start(ToolStarted(event.id, "(unknown tool)", None), now)
        record.ended = now
        record.status = "error" if event.is_error else "ok"
        record.content = event.content
        return record

    def interrupt_running(self, now: float) -> list[ToolRecord]:
        stopped = [r for r in self.records if r.status == "running"]
        for record in stopped:
            record.status = "interrupted"
            record.ended = now
        return stopped

    def running(self) -> list[ToolRecord]:
        return [r for r in self.records if r.status == "running"]

    def get(self, index: int | None) -> ToolRecord | None:
        if not self.records:
            return None
        if index is None:
            return self.records[-1]
        if 1 <= index <= len(self.records):
            return self.records[index - 1]
        return None


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def summarize_args(args: Any, limit: int = ARGS_LIMIT) -> str:
    """``city=Paris, days=3`` (objects), or compact JSON, cut to ``limit`` characters with ``…``."""
    if args is None or args == {}:
        return ""
    if isinstance(args, Mapping):
        text = ", ".join(f"{k}={_scalar(v)}" for k, v in args.items())
    else:
        text = _scalar(args)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{max(seconds, 0) * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def content_text(content: Any) -> str:
    """The readable text of a tool result (content blocks, or ``{content: [blocks], details}`` as a
    ``tool_finished`` event carries them; images named, not dumped)."""
    if isinstance(content, Mapping) and isinstance(content.get("content"), list):
        content = content["content"]
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, Mapping) and block.get("type") == "image":
                parts.append(f"[image {block.get('mimeType', '')}]")
            else:
                parts.append(_scalar(block))
        return "\n".join(parts)
    return "" if content is None else _scalar(content)


def plain_tool_line(record: ToolRecord, now: float) -> str:
    """The line without colour (plain mode and tests)."""
    args = f" {record.summary}" if record.summary else ""
    status = {"running": "running", "ok": "✓", "error": "✗", "interrupted": "✗ interrupted"}[record.status]
    took = "" if record.status == "running" else f" {format_duration(record.duration(now))}"
    return f"[tool #{record.index}] {record.name}{args} {status}{took}"
