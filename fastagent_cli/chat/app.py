"""The terminal chat: a prompt-toolkit prompt with history, completion and a status toolbar, and
turns rendered with rich.

Keys: Enter sends; Alt+Enter (Esc Enter) or Ctrl+J inserts a newline; pasted text is inserted as
is (bracketed paste), newlines included; Ctrl+T shows or hides thinking; Ctrl+C interrupts a
running turn (or ``/compact``), clears a non-empty prompt, and on an empty prompt arms exit (a
second Ctrl+C exits); Ctrl+D on an empty prompt exits. The prompt history is kept in ``<state
root>/chat_history``.

While an answer streams, typing goes to a composer under it (:mod:`.composer`): Enter steers the
run with it, Alt+Enter queues it as a follow-up; the run's queue and each prompt it takes in are
shown as they happen. A steer that arrives after the answer finished is sent as the next prompt;
text typed and not sent starts the next prompt.

A turn's invoke stream only drives it (and yields its answer and usage): the screen shows the run
from the session's live events, through the :class:`~fastagent_cli.chat.transcript.Transcript`
``attach`` draws with.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output
from rich.console import Console
from rich.text import Text

from fastagent_cli.chat.commands import dispatch
from fastagent_cli.chat.completion import SlashCompleter
from fastagent_cli.chat.composer import ActionKind, TurnComposer
from fastagent_cli.chat.controller import ChatController, SessionInfo
from fastagent_cli.chat.log_notes import warnings_as_notes
from fastagent_cli.chat.run_actions import send_to_run
from fastagent_cli.chat.run_view import RunView
from fastagent_cli.chat.screen import SessionScreen
from fastagent_cli.chat.status import status_fragments
from fastagent_cli.chat.terminal_ui import TerminalUI
from fastagent_cli.chat.turn_keys import watch_turn_keys
from fastagent_cli.errors import FastagentError

__all__ = ["ChatApp"]


class ChatApp(SessionScreen):
    def __init__(
        self,
        ctl: ChatController,
        *,
        console: Console | None = None,
        input: Input | None = None,
        output: Output | None = None,
        history_path: Path | None = None,
        show_thinking: bool = True,
    ) -> None:
        super().__init__(
            ctl.link,
            lambda: ctl.session,
            by="chat",
            console=console,
            input=input,
            output=output,
            show_thinking=show_thinking,
            clock=ctl.clock,
        )
        self.ctl = ctl
        self.ui = TerminalUI(self.console, self.renderer, self.input, self.output)
        self._exit_armed = False
        self._next: list[str] = []
        """Steers that came too late for their run: sent as the next prompts."""
        self.prompt = self.make_prompt(
            self._bindings(),
            ctl.attachments,
            completer=SlashCompleter(ctl),
            toolbar=self._toolbar,
            history_path=history_path,
        )
        self.prompt.default_buffer.on_text_changed += self._disarm

    # --- prompt ---------------------------------------------------------------------------------

    def _bindings(self) -> KeyBindings:
        kb = self.prompt_keys(self.ctl.attachments)

        @kb.add("c-c")
        def _ctrl_c(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()
                self._exit_armed = False
            elif self._exit_armed:
                event.app.exit(exception=EOFError())
            else:
                self._exit_armed = True
                event.app.invalidate()

        return kb

    def _disarm(self, _buffer: object) -> None:
        self._exit_armed = False

    def _toolbar(self) -> StyleAndTextTuples:
        return list(self._status_fragments())

    def _status_fragments(self) -> list[tuple[str, str]]:
        hint = "Ctrl+C again to exit" if self._exit_armed else ""
        if not self.renderer.show_thinking:
            hint = (hint + "  thinking hidden").strip()
        return status_fragments(self.ctl.status(hint))

    # --- main loop ------------------------------------------------------------------------------

    async def run(self) -> int:
        info = await self.ctl.load()
        self._banner(info)
        # The terminal stays raw for the whole chat, not only while a prompt or a turn reads it:
        # keys typed in between are neither echoed into the output nor turned from Enter (\r)
        # into Ctrl+J (\n) by the tty; they wait as type-ahead for the next prompt.
        with self.input.raw_mode(), warnings_as_notes(self.renderer):
            while await self._one_line():
                pass
        return 0

    async def _one_line(self) -> bool:
        """Read and handle one prompt; ``False`` when the chat should end."""
        self.prompts_shown += 1
        if self._next:
            text = self._next.pop(0)
            self.console.print(Text(f"› {text}", "bold"))
            await self.turn(text)
            return True
        try:
            text = await self.prompt.prompt_async(default=self._draft)
        except EOFError:
            return False
        finally:
            self._draft = ""
        self._exit_armed = False
        if not text.strip():
            return True
        if text.split(maxsplit=1)[0] == "/compact":
            await self._interruptible_command(text.strip())
            return True
        if text.startswith("/") and not text.startswith("//"):
            outcome = await dispatch(self.ctl, self.ui, text.strip())
            if outcome.exit:
                return False
            if outcome.send is None:
                return True
            text = outcome.send
        elif text.startswith("//"):
            text = text[1:]
        await self.turn(text)
        return True

    def _banner(self, info: SessionInfo) -> None:
        ctl = self.ctl
        head = Text.assemble(
            ("fastagent chat", "bold"),
            (f" · {ctl.opened.name} · {ctl.model} · thinking {ctl.thinking}", "dim"),
        )
        self.console.print(head)
        if info.exists:
            self.console.print(Text(f"resumed session {info.session}: {info.messages} messages", "cyan"))
            if info.last_prompt or info.last_answer:
                self.ui.show_session(info.last_prompt, info.last_answer)
        else:
            self.console.print(Text(f"new session {info.session}", "dim"))
        self.console.print(
            Text(
                "Enter sends · Alt+Enter or Ctrl+J newline · /help · Ctrl+C interrupts · Ctrl+D exits",
                "dim",
            )
        )

    async def _interruptible_command(self, line: str) -> None:
        """A long command (``/compact``) that Ctrl+C stops."""
        self.console.print(Text("compacting the session… (Ctrl+C aborts)", "dim"))
        task = asyncio.create_task(dispatch(self.ctl, self.ui, line))
        with watch_turn_keys(self.input, lambda: _cancel(task), self.toggle_thinking):
            await asyncio.wait({task})
        if task.cancelled():
            self.ui.info("compaction aborted; the history is unchanged")

    # --- a turn ---------------------------------------------------------------------------------

    async def turn(self, text: str) -> None:
        """Run ``text``: its invoke stream drives the run (Ctrl+C closes it, which aborts the run),
        and what the screen shows of it comes from the session's events, through the same
        :class:`~fastagent_cli.chat.transcript.Transcript` that ``attach`` draws with."""
        try:
            run = await self.ctl.begin_turn(text)
        except FastagentError as exc:
            self.ui.error(exc.message)
            return
        actions: list[asyncio.Task[None]] = []

        def submit(typed: str, kind: ActionKind) -> None:
            actions.append(asyncio.create_task(self._act(typed, kind)))

        composer = TurnComposer(submit)
        view = RunView(self.renderer, self.ctl.clock, self.ctl.tools, self.approvals)
        events = self.ctl.hub_session().events()  # before the run starts: nothing is missed
        watcher = asyncio.create_task(view.follow(events))
        task = asyncio.create_task(run.run())
        async with self.run_view(composer, lambda: view.interrupt(task)):
            try:
                await asyncio.wait({task})
            finally:
                if not task.done():
                    task.cancel()
                    await asyncio.wait({task})
                await asyncio.gather(*actions, return_exceptions=True)
                await self.approvals.settle()
                # The run's events were published before its invoke stream ended: what the watcher
                # has not shown yet is buffered, and is shown now, in order.
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
                for event in events.drain():
                    view.show(event)
                await events.aclose()
                if view.lost:  # the stream closed under the watcher (too far behind): the record has it
                    await view.catch_up(self.ctl.hub_session())
                self.approvals.forget()  # the run is over: nothing of it waits in this process
                if task.cancelled():
                    run.mark_interrupted()
                    if not view.settled:  # the run's settlement never reached the screen
                        self.renderer.interrupted(self.ctl.tools.interrupt_running(self.ctl.clock()))
                elif (error := task.exception()) is not None:
                    self.ui.error(f"internal error in the chat: {type(error).__name__}: {error}")
                elif not view.started and run.failure is not None:  # refused before it began (busy)
                    self.renderer.failed(run.failure)
        await self.ctl.end_turn(run)

    async def _act(self, text: str, kind: ActionKind) -> None:
        """Send a steer / follow-up typed during the turn; too late for this run: the next prompt."""
        try:
            sent = await send_to_run(self.ctl.hub_session(), text, kind)
        except FastagentError as exc:
            self.renderer.note(f"✗ {exc.message}", "red")
            return
        if sent.late:
            self._next.append(text)
            self.renderer.note("↳ the answer finished first: sending it as the next prompt")
        elif sent.refused is not None:
            self.renderer.note(f"✗ {sent.refused}", "red")


def _cancel(task: asyncio.Task[Any]) -> None:
    task.cancel()
