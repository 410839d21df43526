"""Rich output for one chat turn: streamed Markdown, dimmed thinking, one line per tool call.

The answer is cut into Markdown blocks (:mod:`.blocks`); each finished block is rendered and
printed once, so a long answer costs the same per token at its end as at its start. A delta only
feeds the splitter; finished blocks wait for the next :meth:`refresh` (the app calls it about 12
times a second), which renders them together as one Markdown document, prints them above the live
region and redraws that region once. What is still open (the last lines of the current block,
running tools, a spinner with the elapsed time) lives in that transient :class:`rich.live.Live`
region of bounded size.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.panel import Panel
from rich.segment import Segment, SegmentLines
from rich.syntax import Syntax
from rich.text import Text

from fastagent_cli.chat.blocks import BlockSplitter
from fastagent_cli.chat.tool_lines import MARKS, ToolRecord, content_text, format_duration
from fastagent_cli.chat.turns import CUT_OFF_MARK, was_cut_off
from fastagent_cli.contract import Completed, Failed, Retrying
from fastagent_cli.errors import one_line

__all__ = ["ChatRenderer"]

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_TAIL_LINES = 6
_PENDING_SHOWN = 3
Kind = Literal["none", "block", "tool", "note"]


class ChatRenderer:
    """Implements :class:`fastagent_cli.chat.turns.TurnSink` on a rich console."""

    def __init__(
        self,
        console: Console,
        *,
        show_thinking: bool = True,
        code_theme: str = "monokai",
        clock: Callable[[], float] = time.monotonic,
        keys_hint: str = "Ctrl+C interrupts",
    ) -> None:
        self.console = console
        self.keys_hint = keys_hint
        """Shown beside the spinner while a turn runs."""
        self.show_thinking = show_thinking
        self.code_theme = code_theme
        self.clock = clock
        self._live: Live | None = None
        self._answer = BlockSplitter()
        self._thinking = BlockSplitter()
        self._thinking_chars = 0
        self._running: list[ToolRecord] = []
        self._started = 0.0
        self._last: Kind = "none"
        self._open: Literal["", "text", "thinking"] = ""
        self._queued: list[str] = []
        """Finished answer blocks not printed yet (printed together at the next refresh)."""
        self.composer: str | None = None
        """What the user types during the turn (``None``: no composer, e.g. not a terminal)."""
        self.pending: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        """The run's queued steering and follow-up prompts."""
        self.question: list[Text] = []
        """An approval being asked (:mod:`.approval_prompt`): shown in place of the composer."""

    # --- turn lifecycle -------------------------------------------------------------------------

    def begin_turn(self) -> None:
        self.pending = ((), ())
        self._answer = BlockSplitter()
        self._thinking = BlockSplitter()
        self._thinking_chars = 0
        self._running = []
        self._started = self.clock()
        self._last = "none"
        self._open = ""
        self._queued = []
        self._live = Live(
            console=self.console,
            transient=True,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()
        self.refresh()

    def end_turn(self) -> None:
        self._flush_open()
        self.composer = None
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._last != "none":
            self.console.print()

    def refresh(self) -> None:
        self._print_queued()
        if self._live is not None:
            self._live.update(self._view(), refresh=True)

    # --- events (TurnSink) ----------------------------------------------------------------------

    def text(self, delta: str) -> None:
        if self._open == "thinking":
            self._flush_open()
        self._open = "text"
        self._queued.extend(self._answer.feed(delta))

    def thinking(self, delta: str) -> None:
        if self._open == "text":
            self._flush_open()
        self._open = "thinking"
        self._thinking_chars += len(delta)
        for block in self._thinking.feed(delta):
            self._print_thinking(block)

    def tool_started(self, record: ToolRecord) -> None:
        self._flush_open()
        self._running.append(record)

    def tool_ended(self, record: ToolRecord) -> None:
        if record in self._running:
            self._running.remove(record)
        self._print_tool(record)

    def retrying(self, event: Retrying) -> None:
        self._flush_open()
        delay = format_duration(event.delay_ms / 1000)
        self._print(
            Text(f"↻ retrying ({event.attempt}/{event.max_attempts}) in {delay}: {event.reason}", "yellow"),
            "note",
        )

    def completed(self, event: Completed) -> None:
        self._flush_open()
        if was_cut_off(event):
            self._print(Text(CUT_OFF_MARK, "yellow"), "note")

    def failed(self, event: Failed) -> None:
        self._flush_open()
        suffix = " (retryable)" if event.retryable else ""
        self._print(Text(f"✗ failed: {event.details}{suffix}", "bold red"), "note")

    def end_message(self) -> None:
        """An answer (or a part of it) is complete: print what is still open of it."""
        self._flush_open()

    def user_prompt(self, text: str) -> None:
        """A steer or follow-up the run took in: shown where it joined the conversation."""
        self._flush_open()
        self._print(Text(f"› {text}", "bold"), "note")

    def note(self, text: str, style: str = "cyan") -> None:
        self._flush_open()
        self._print(Text(text, style), "note")

    def interrupted(self, stopped: list[ToolRecord]) -> None:
        self._flush_open()
        self._running = []
        for record in stopped:
            self._print_tool(record)
        self._print(Text("⏹ interrupted", "yellow"), "note")

    # --- outside turns --------------------------------------------------------------------------

    def tool_output(self, record: ToolRecord) -> None:
        text = content_text(record.content) if record.content is not None else "(no output yet)"
        title = f"#{record.index} {record.name}"
        if record.summary:
            title += f" {record.summary}"
        style = "red" if record.status in ("error", "interrupted") else "dim"
        self.console.print(Panel(Text(text), title=title, title_align="left", border_style=style))

    def toggle_thinking(self) -> bool:
        self.show_thinking = not self.show_thinking
        return self.show_thinking

    # --- printing -------------------------------------------------------------------------------

    def _flush_open(self) -> None:
        if self._open == "text":
            block = self._answer.flush()
            if block:
                self._queued.append(block)
        elif self._open == "thinking":
            block = self._thinking.flush()
            if block:
                self._print_thinking(block)
        self._open = ""
        self._print_queued()

    def _print_queued(self) -> None:
        if self._queued:
            document = "\n\n".join(self._queued)
            self._queued = []
            self._print_markdown(document)

    def _print(self, renderable: RenderableType, kind: Kind) -> None:
        if kind != "block":
            self._print_queued()
        if self._last != "none" and not (kind == "tool" and self._last == "tool"):
            self.console.print()
        self.console.print(renderable)
        self._last = kind

    def _print_markdown(self, block: str) -> None:
        markdown = Markdown(block, code_theme=self.code_theme)
        lines = self.console.render_lines(markdown, self.console.options, pad=False)
        while lines and _blank(lines[0]):
            lines.pop(0)
        while lines and _blank(lines[-1]):
            lines.pop()
        if lines:
            self._print(SegmentLines(lines, new_lines=True), "block")

    def _print_thinking(self, block: str) -> None:
        if self.show_thinking:
            self._print(Text(block, style="dim italic"), "block")

    def _print_tool(self, record: ToolRecord) -> None:
        self._print(self._tool_line(record, MARKS[record.status]), "tool")

    def _tool_line(self, record: ToolRecord, mark: str) -> Text:
        colour = {"running": "cyan", "ok": "green", "error": "red", "interrupted": "yellow"}[record.status]
        line = Text.assemble(("  " + mark + " ", colour), (record.name, "bold"))
        if record.summary:
            line.append(" " + record.summary, "dim")
        took = format_duration(record.duration(self.clock()))
        note = {"running": "running ", "interrupted": "interrupted "}.get(record.status, "")
        line.append(f"  {note}{took}", "dim")
        line.append(f"  #{record.index}", "dim")
        return line

    def _view(self) -> RenderableType:
        now = self.clock()
        spin = _SPINNER[int(now * 12) % len(_SPINNER)]
        parts: list[RenderableType] = []
        width = max(self.console.width - 2, 20)
        if self._open == "text" and self._answer.in_fence:
            code = "\n".join(self._answer.code_tail(_TAIL_LINES))
            lexer = self._answer.fence_info or "text"
            parts.append(Syntax(code, lexer, theme=self.code_theme, word_wrap=True, padding=(0, 1)))
        elif self._open == "text":
            parts.append(Text("\n".join(self._answer.tail(_TAIL_LINES, width * 2))))
        elif self._open == "thinking":
            if self.show_thinking:
                parts.append(Text("\n".join(self._thinking.tail(_TAIL_LINES, width * 2)), "dim italic"))
            else:
                parts.append(Text(f"thinking… ({self._thinking_chars} chars hidden, Ctrl+T shows)", "dim"))
        for record in self._running:
            parts.append(self._tool_line(record, spin))
        steering, follow_ups = self.pending
        for label, texts in (("steering", steering), ("follow-up", follow_ups)):
            for text in texts[:_PENDING_SHOWN]:
                parts.append(Text(f"  ↳ {label}: {one_line(text, width - 20)}", "dim"))
        elapsed = format_duration(now - self._started)
        parts.append(Text(f"{spin} {elapsed} · {self.keys_hint}", "dim"))
        if self.question:
            parts.extend(self.question)
        elif self.composer is not None:
            if self.composer:
                parts.append(Text.assemble(("› ", "bold #5fafff"), self.composer, ("▏", "dim")))
            else:
                parts.append(Text("› type to steer · Enter steers · Alt+Enter queues a follow-up", "dim"))
        return Group(*parts)


def _blank(line: list[Segment]) -> bool:
    return all(not segment.text.strip() for segment in line)
