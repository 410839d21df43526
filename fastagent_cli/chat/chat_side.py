"""Chat's :class:`~fastagent_cli.chat.app.Side` of the one app: a local link (the in-process
session hub), runs that the chat starts and drives.

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
from dataclasses import dataclass, field
from typing import Any

from prompt_toolkit.completion import Completer
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.text import Text

from fastagent_cli.chat.app import Mounted, SessionApp
from fastagent_cli.chat.commands import dispatch
from fastagent_cli.chat.completion import SlashCompleter
from fastagent_cli.chat.composer import ActionKind
from fastagent_cli.chat.controller import ChatController, SessionInfo
from fastagent_cli.chat.run_actions import send_to_run
from fastagent_cli.chat.run_view import RunView
from fastagent_cli.chat.status import StatusInfo
from fastagent_cli.chat.turn_keys import watch_turn_keys
from fastagent_cli.chat.turns import TurnRun
from fastagent_cli.control import SessionEventStream
from fastagent_cli.errors import FastagentError

__all__ = ["KEYS", "ChatSide"]

KEYS = "Enter sends · Alt+Enter or Ctrl+J newline · /help · Ctrl+C interrupts · Ctrl+D exits"


@dataclass(slots=True)
class _OwnRun:
    """A run this chat started: its invoke stream (``task``) and the view following its events."""

    run: TurnRun
    view: RunView
    events: SessionEventStream
    watcher: asyncio.Task[None]
    task: asyncio.Task[None]
    actions: list[asyncio.Task[None]] = field(default_factory=list)


class ChatSide(Mounted):
    by = "chat"
    keys_hint = "Ctrl+C interrupts"
    erase_prompt = False
    notes_from_log = True

    def __init__(self, ctl: ChatController) -> None:
        self.ctl = ctl
        self.link = ctl.link
        self.clock = ctl.clock
        self.attachments = ctl.attachments
        self._exit_armed = False
        self._next: list[str] = []
        """Steers that came too late for their run: sent as the next prompts."""
        self._own: _OwnRun | None = None

    @property
    def session_id(self) -> str:
        return self.ctl.session

    # --- the prompt -----------------------------------------------------------------------------

    def add_keys(self, kb: KeyBindings) -> None:
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

    def completer(self) -> Completer:
        return SlashCompleter(self.ctl)

    def mount(self, app: SessionApp) -> None:
        super().mount(app)
        app.prompt.default_buffer.on_text_changed += self._disarm

    def _disarm(self, _buffer: object) -> None:
        self._exit_armed = False

    def status(self) -> StatusInfo:
        return self.ctl.status("Ctrl+C again to exit" if self._exit_armed else "")

    async def open(self) -> None:
        self._banner(await self.ctl.load())

    def _banner(self, info: SessionInfo) -> None:
        ctl, console = self.ctl, self.app.console
        head = Text.assemble(
            ("fastagent chat", "bold"),
            (f" · {ctl.opened.name} · {ctl.model} · thinking {ctl.thinking}", "dim"),
        )
        console.print(head)
        if info.exists:
            console.print(Text(f"resumed session {info.session}: {info.messages} messages", "cyan"))
            if info.last_prompt or info.last_answer:
                self.app.ui.show_session(info.last_prompt, info.last_answer)
        else:
            console.print(Text(f"new session {info.session}", "dim"))
        console.print(Text(KEYS, "dim"))

    # --- a line ---------------------------------------------------------------------------------

    def queued(self) -> str | None:
        return self._next.pop(0) if self._next else None

    async def line(self, text: str) -> None:
        self._exit_armed = False
        if not text.strip():
            return
        if text.split(maxsplit=1)[0] == "/compact":
            await self._interruptible_command(text.strip())
            return
        if text.startswith("/") and not text.startswith("//"):
            outcome = await dispatch(self.ctl, self.app.ui, text.strip())
            if outcome.exit:
                self.app.end()
                return
            if outcome.send is None:
                return
            text = outcome.send
        elif text.startswith("//"):
            text = text[1:]
        await self.start(text)

    async def _interruptible_command(self, line: str) -> None:
        """A long command (``/compact``) that Ctrl+C stops."""
        app = self.app
        app.console.print(Text("compacting the session… (Ctrl+C aborts)", "dim"))
        task = asyncio.create_task(dispatch(self.ctl, app.ui, line))
        with watch_turn_keys(app.input, lambda: _cancel(task), app.toggle_thinking):
            await asyncio.wait({task})
        if task.cancelled():
            app.ui.info("compaction aborted; the history is unchanged")

    async def start(self, text: str) -> None:
        """Start a turn with ``text``: its invoke stream drives the run (Ctrl+C closes it, which
        aborts the run); the screen shows it from the session's events, subscribed to before the
        run starts, through the same transcript ``attach`` draws with."""
        try:
            run = await self.ctl.begin_turn(text)
        except FastagentError as exc:
            self.app.ui.error(exc.message)
            return
        app = self.app
        view = RunView(app.renderer, self.ctl.clock, self.ctl.tools, app.approvals)
        events = self.ctl.hub_session().events()  # before the run starts: nothing is missed
        watcher = asyncio.create_task(view.follow(events))
        self._own = _OwnRun(run, view, events, watcher, asyncio.create_task(run.run()))
        app.show_run()

    # --- under the run --------------------------------------------------------------------------

    def submit(self, text: str, kind: ActionKind) -> None:
        if self._own is not None:
            self._own.actions.append(asyncio.create_task(self._act(text, kind)))

    def interrupt(self) -> None:
        if self._own is not None:
            self._own.view.interrupt(self._own.task)

    async def during_run(self) -> None:
        own, app = self._own, self.app
        if own is None:  # nothing of this chat's to show
            await app.leave_run()
            return
        run, view, events, task = own.run, own.view, own.events, own.task
        try:
            await asyncio.wait({task})
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
            await asyncio.gather(*own.actions, return_exceptions=True)
            await app.approvals.settle()
            # The run's events were published before its invoke stream ended: what the watcher
            # has not shown yet is buffered, and is shown now, in order.
            own.watcher.cancel()
            await asyncio.gather(own.watcher, return_exceptions=True)
            for event in events.drain():
                view.show(event)
            await events.aclose()
            if view.lost:  # the stream closed under the watcher (too far behind): the record has it
                await view.catch_up(self.ctl.hub_session())
            app.approvals.forget()  # the run is over: nothing of it waits in this process
            if task.cancelled():
                run.mark_interrupted()
                if not view.settled:  # the run's settlement never reached the screen
                    app.renderer.interrupted(self.ctl.tools.interrupt_running(self.ctl.clock()))
            elif (error := task.exception()) is not None:
                app.ui.error(f"internal error in the chat: {type(error).__name__}: {error}")
            elif not view.started and run.failure is not None:  # refused before it began (busy)
                app.renderer.failed(run.failure)
            self._own = None
            await app.leave_run()
        await self.ctl.end_turn(run)

    async def _act(self, text: str, kind: ActionKind) -> None:
        """Send a steer / follow-up typed during the turn; too late for this run: the next prompt."""
        try:
            sent = await send_to_run(self.ctl.hub_session(), text, kind)
        except FastagentError as exc:
            self.app.renderer.note(f"✗ {exc.message}", "red")
            return
        if sent.late:
            self._next.append(text)
            self.app.renderer.note("↳ the answer finished first: sending it as the next prompt")
        elif sent.refused is not None:
            self.app.renderer.note(f"✗ {sent.refused}", "red")

    async def close(self) -> None:
        """Nothing to close: the opened agent is its launcher's."""

    def ended(self) -> int:
        return 0


def _cancel(task: asyncio.Task[Any]) -> None:
    task.cancel()
