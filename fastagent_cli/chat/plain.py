"""Chat without a terminal: prompts line by line from stdin, plain text out, so chat is scriptable.

Every non-empty line is one turn (slash commands work as in the terminal; ``//text`` sends
``/text``). The answer goes to stdout, ending with a newline; tool lines, notices and failures go
to stderr. Thinking is not shown unless ``/thinking-display on``. The exit status is 1 if any turn
or command failed, else 0.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TextIO

from fastagent_cli.chat.commands import dispatch
from fastagent_cli.chat.controller import ChatController
from fastagent_cli.chat.tool_lines import ToolRecord, content_text, plain_tool_line
from fastagent_cli.chat.turns import CUT_OFF_MARK, was_cut_off
from fastagent_cli.contract import Completed, Failed, Retrying
from fastagent_cli.errors import FastagentError

__all__ = ["PlainSink", "PlainUI", "read_lines", "run_plain"]


class PlainSink:
    """A :class:`~fastagent_cli.chat.turns.TurnSink` writing plain text."""

    def __init__(self, out: TextIO, err: TextIO, clock: Callable[[], float]) -> None:
        self.out = out
        self.err = err
        self.clock = clock
        self.show_thinking = False
        self._at_line_start = True
        self._thinking_open = False

    def _note(self, line: str) -> None:
        self._end_answer_line()
        self.err.write(line + "\n")
        self.err.flush()

    def _end_answer_line(self) -> None:
        if not self._at_line_start:
            self.out.write("\n")
            self.out.flush()
            self._at_line_start = True
        if self._thinking_open:
            self.err.write("\n")
            self._thinking_open = False

    def text(self, delta: str) -> None:
        if self._thinking_open:
            self.err.write("\n")
            self._thinking_open = False
        self.out.write(delta)
        self.out.flush()
        if delta:
            self._at_line_start = delta.endswith("\n")

    def thinking(self, delta: str) -> None:
        if not self.show_thinking:
            return
        if not self._thinking_open:
            self.err.write("[thinking] ")
            self._thinking_open = True
        self.err.write(delta)
        self.err.flush()

    def tool_started(self, record: ToolRecord) -> None:
        self._end_answer_line()

    def tool_ended(self, record: ToolRecord) -> None:
        self._note(plain_tool_line(record, self.clock()))

    def retrying(self, event: Retrying) -> None:
        self._note(
            f"[fastagent] transient failure — retrying ({event.attempt}/{event.max_attempts} "
            f"in {event.delay_ms}ms): {event.reason}"
        )

    def completed(self, event: Completed) -> None:
        self._end_answer_line()
        if was_cut_off(event):
            self._note(f"[fastagent] note: {CUT_OFF_MARK.removeprefix('✂ ')}")

    def failed(self, event: Failed) -> None:
        self._note(f"[fastagent] failed: {event.details}{' (retryable)' if event.retryable else ''}")

    def interrupted(self, stopped: list[ToolRecord]) -> None:
        for record in stopped:
            self._note(plain_tool_line(record, self.clock()))
        self._note("[fastagent] interrupted")


class PlainUI:
    """The :class:`~fastagent_cli.chat.commands.ChatUI` of plain mode: everything on stderr."""

    def __init__(self, sink: PlainSink) -> None:
        self.sink = sink
        self.err = sink.err

    @property
    def show_thinking(self) -> bool:
        return self.sink.show_thinking

    @show_thinking.setter
    def show_thinking(self, value: bool) -> None:
        self.sink.show_thinking = value

    def info(self, text: str) -> None:
        self.err.write(f"[chat] {text}\n")
        self.err.flush()

    def error(self, text: str) -> None:
        self.err.write(f"Error: {text}\n")
        self.err.flush()

    def rows(self, title: str, rows: list[tuple[str, str]]) -> None:
        width = max((len(k) for k, _ in rows), default=0)
        self.err.write(f"{title}:\n" + "".join(f"  {k.ljust(width)}  {v}\n" for k, v in rows))
        self.err.flush()

    def tool_output(self, record: ToolRecord) -> None:
        self.err.write(f"[tool #{record.index}] {record.name} output:\n{content_text(record.content)}\n")
        self.err.flush()

    def show_session(self, prompt: str, answer: str) -> None:
        return None  # scripts read their own output; nothing to replay

    async def choose(self, title: str, options: list[tuple[str, str]]) -> str | None:
        self.rows(title, [(str(i), label) for i, (_, label) in enumerate(options, 1)])
        self.info("no terminal to pick in: repeat the command with a number or name")
        return None

    def terminal_writer(self) -> Callable[[str], None] | None:
        return None


def read_lines(stream: TextIO, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
    try:
        for line in stream:
            loop.call_soon_threadsafe(queue.put_nowait, line)
    except (OSError, ValueError):
        pass
    finally:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, None)
        except RuntimeError:  # the loop is already closed: nobody is waiting
            pass


async def run_plain(ctl: ChatController, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    sink = PlainSink(stdout, stderr, ctl.clock)
    ui = PlainUI(sink)
    info = await ctl.load()
    state = f"resumed, {info.messages} messages" if info.exists else "new"
    ui.info(f"{ctl.opened.agent_dir} · {ctl.model} · session {ctl.session} ({state})")
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    # A daemon thread: a blocked read never holds up the exit (an executor thread would).
    reader = threading.Thread(target=read_lines, args=(stdin, asyncio.get_running_loop(), queue), daemon=True)
    reader.start()
    ok = True
    while (line := await queue.get()) is not None:
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        if text.startswith("/") and not text.startswith("//"):
            outcome = await dispatch(ctl, ui, text.strip())
            ok = ok and outcome.ok
            if outcome.exit:
                break
            if outcome.send is None:
                continue
            text = outcome.send
        elif text.startswith("//"):
            text = text[1:]
        try:
            run = await ctl.begin_turn(text, sink)
        except FastagentError as exc:
            ui.error(exc.message)
            ok = False
            continue
        await run.run()
        await ctl.end_turn(run)
        ok = ok and run.status == "completed"
    return 0 if ok else 1
