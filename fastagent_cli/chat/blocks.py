"""Cutting a streamed Markdown answer into blocks that are rendered once each.

Rendering the whole answer again for every token costs O(n) per token, O(n²) per answer. Instead
the stream is cut at block boundaries that do not change the meaning of the Markdown, each
finished block is rendered and printed once, and only the open block's last few lines are shown
live (plain, bounded). Boundaries:

* a blank line outside a code fence, once the next line shows the block really ended (an
  indented line or another list item after a blank line still belongs to the same list);
* a closing code fence (the code block is complete);
* an unindented opening fence or a heading line (both interrupt a paragraph anyway).

Work per delta is proportional to the delta, never to the answer.
"""

from __future__ import annotations

import re

__all__ = ["BlockSplitter"]

_FENCE = re.compile(r"^(`{3,}|~{3,})")
_HEADING = re.compile(r"^#{1,6}(\s|$)")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d{1,9}[.)])\s")


class BlockSplitter:
    def __init__(self) -> None:
        self._lines: list[str] = []
        """Complete lines of the open block."""
        self._partial: list[str] = []
        """Pieces of the current, unfinished line."""
        self._partial_len = 0
        self._fence: str | None = None
        self._blank_seen = False
        """A blank line ended the open block's text; the next line decides whether it ends it."""
        self._is_list = False
        self._info = ""
        self._opener: str | None = None

    @property
    def in_fence(self) -> bool:
        return self._fence is not None

    @property
    def fence_info(self) -> str:
        """The language of the open code fence (``python``), or ``""``."""
        return self._info if self._fence is not None else ""

    def code_tail(self, max_lines: int) -> list[str]:
        """The last lines inside the open code fence (the fence line itself left out)."""
        lines = self._lines[-max_lines:]
        if self._partial:
            lines = [*lines, "".join(self._partial)][-max_lines:]
        for i, line in enumerate(lines):
            if line is self._opener:
                return lines[i + 1 :]
        return lines

    def feed(self, delta: str) -> list[str]:
        """Take a piece of the answer; return the blocks it completed (usually none)."""
        done: list[str] = []
        start = 0
        while True:
            nl = delta.find("\n", start)
            if nl < 0:
                if start < len(delta):
                    self._partial.append(delta[start:])
                    self._partial_len += len(delta) - start
                return done
            self._partial.append(delta[start:nl])
            line = "".join(self._partial)
            self._partial = []
            self._partial_len = 0
            done.extend(self._line(line))
            start = nl + 1

    def flush(self) -> str | None:
        """The end of the answer: whatever is open becomes the last block."""
        if self._partial:
            line = "".join(self._partial)
            self._partial = []
            self._partial_len = 0
            self._lines.append(line)
        self._fence = None
        return self._take()

    def tail(self, max_lines: int, max_chars: int) -> list[str]:
        """The last lines of the open block (the current partial line last), for the live view."""
        lines = self._lines[-max_lines:]
        if self._partial:
            if len(self._partial) > 1:
                self._partial = ["".join(self._partial)]
            lines = [*lines, self._partial[0]][-max_lines:]
        return [line if len(line) <= max_chars else "…" + line[-(max_chars - 1) :] for line in lines]

    # --- internals ------------------------------------------------------------------------------

    def _take(self) -> str | None:
        while self._lines and not self._lines[-1].strip():
            self._lines.pop()
        block = "\n".join(self._lines) if self._lines else None
        self._lines = []
        self._blank_seen = False
        self._is_list = False
        return block

    def _line(self, line: str) -> list[str]:
        stripped = line.lstrip()
        if self._fence is not None:
            self._lines.append(line)
            if stripped.startswith(self._fence) and not stripped.strip(self._fence[0]).strip():
                self._fence = None
                block = self._take()
                return [block] if block else []
            return []
        out: list[str] = []
        if not stripped:
            if self._lines:
                self._blank_seen = True
                self._lines.append(line)
            return out
        continues = line[:1] in (" ", "\t") or (self._is_list and _LIST_ITEM.match(line) is not None)
        if self._blank_seen and not continues:
            block = self._take()
            if block:
                out.append(block)
        self._blank_seen = False
        fence = _FENCE.match(line)
        if fence is not None or _HEADING.match(line):
            block = self._take()
            if block:
                out.append(block)
            self._lines.append(line)
            if fence is not None:
                self._open_fence(line, fence.group(1))
                return out
            heading = self._take()
            if heading:
                out.append(heading)
            return out
        if not self._lines and _LIST_ITEM.match(line):
            self._is_list = True
        indented_fence = _FENCE.match(stripped)
        self._lines.append(line)
        if indented_fence is not None:
            self._open_fence(line, indented_fence.group(1))
        return out

    def _open_fence(self, line: str, fence: str) -> None:
        self._fence = fence
        self._opener = line
        self._info = line.lstrip()[len(fence) :].strip().split(" ")[0]
