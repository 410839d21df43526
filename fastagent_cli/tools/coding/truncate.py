"""pi's output truncation: 2000 lines or 50 KB, whichever limit is hit first.

``truncate_head`` keeps whole lines from the start (``read``); ``truncate_tail`` keeps whole lines
from the end (``bash``), except that a last line longer than the byte limit is kept partially.
Byte counts are UTF-8; a trailing newline does not count as an extra line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "Truncation",
    "count_lines",
    "format_size",
    "truncate_head",
    "truncate_tail",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024


@dataclass(frozen=True, slots=True)
class Truncation:
    content: str
    truncated: bool
    truncated_by: Literal["lines", "bytes"] | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool = False
    first_line_exceeds_limit: bool = False
    max_lines: int = DEFAULT_MAX_LINES
    max_bytes: int = DEFAULT_MAX_BYTES

    def to_json(self) -> dict[str, Any]:
        """The ``details.truncation`` object, in pi's field names."""
        return {
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def format_size(size: int) -> str:
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _split_lines(content: str) -> list[str]:
    if not content:
        return []
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    return lines


def count_lines(content: str) -> int:
    """Lines as the truncation functions count them (a trailing newline ends the last line)."""
    return len(_split_lines(content))


def _untouched(content: str, lines: int, size: int, max_lines: int, max_bytes: int) -> Truncation:
    return Truncation(
        content, False, None, lines, size, lines, size, max_lines=max_lines, max_bytes=max_bytes
    )


def truncate_head(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> Truncation:
    total_bytes = _utf8_len(content)
    lines = _split_lines(content)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untouched(content, total_lines, total_bytes, max_lines, max_bytes)
    if _utf8_len(lines[0]) > max_bytes:
        return Truncation(
            "", True, "bytes", total_lines, total_bytes, 0, 0,
            first_line_exceeds_limit=True, max_lines=max_lines, max_bytes=max_bytes,
        )  # fmt: skip
    kept: list[str] = []
    used = 0
    truncated_by: Literal["lines", "bytes"] = "lines"
    for i, line in enumerate(lines[:max_lines]):
        size = _utf8_len(line) + (1 if i > 0 else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    output = "\n".join(kept)
    return Truncation(
        output, True, truncated_by, total_lines, total_bytes, len(kept), _utf8_len(output),
        max_lines=max_lines, max_bytes=max_bytes,
    )  # fmt: skip


def _tail_bytes(line: str, max_bytes: int) -> str:
    """The end of ``line`` in at most ``max_bytes`` UTF-8 bytes, starting on a character."""
    raw = line.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return line
    start = len(raw) - max_bytes
    while start < len(raw) and (raw[start] & 0xC0) == 0x80:
        start += 1
    return raw[start:].decode("utf-8", "surrogatepass")


def truncate_tail(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> Truncation:
    total_bytes = _utf8_len(content)
    lines = _split_lines(content)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untouched(content, total_lines, total_bytes, max_lines, max_bytes)
    kept: list[str] = []
    used = 0
    truncated_by: Literal["lines", "bytes"] = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        size = _utf8_len(line) + (1 if kept else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            if not kept:
                piece = _tail_bytes(line, max_bytes)
                kept.append(piece)
                used = _utf8_len(piece)
                partial = True
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    kept.reverse()
    output = "\n".join(kept)
    return Truncation(
        output, True, truncated_by, total_lines, total_bytes, len(kept), _utf8_len(output),
        last_line_partial=partial, max_lines=max_lines, max_bytes=max_bytes,
    )  # fmt: skip
