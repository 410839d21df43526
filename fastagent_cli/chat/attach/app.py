"""``fastagent attach``: the chat's terminal UI on a session that a serve runs.

The screen is the chat's: the same renderer (streamed Markdown, thinking, one line per tool call),
the same keys and the same status line. What differs is who drives: runs come from the session's
live events (whoever started them: a channel, a schedule, another client, this attach), so the
UI switches between the prompt (idle) and the turn view (a run is shown) as the events say.

* Idle, Enter sends the line as a new run through ``POST /control/invoke`` (if a run started
  meanwhile, it steers that run instead); Alt+Enter or Ctrl+J inserts a newline.
* While a run is shown, typing goes to the composer under it: Enter steers the run, Alt+Enter
  queues a follow-up (if the run ended first, the text starts a new run).
* ``/abort`` stops the active run, ``/commands`` lists the agent's skills, ``/help`` the keys;
  every other leading ``/`` word is reserved (``//text`` sends ``/text``).
* Ctrl+C (or Ctrl+D on an empty prompt, or ``/detach``) detaches; a run this attach started is
  cancelled with it (its invoke stream is its driver). Ctrl+T shows or hides thinking.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import getpass
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from prompt_toolkit.completion import WordCompleter
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output
from rich.console import Console
from rich.text import Text

from fastagent_cli.chat.attach.actions import KEYS, AttachActions
from fastagent_cli.chat.attach.follow import AttachEnded, Follower
from fastagent_cli.chat.attach.link import Link
from fastagent_cli.chat.attach.ops import RemoteOps
from fastagent_cli.chat.composer import TurnComposer
from fastagent_cli.chat.screen import SessionScreen
from fastagent_cli.chat.session_commands import SHARED
from fastagent_cli.chat.status import StatusInfo, UsageTotals, format_tokens, status_fragments
from fastagent_cli.chat.terminal_ui import TerminalUI
from fastagent_cli.chat.transcript import Transcript
from fastagent_cli.control import SessionState

__all__ = ["AttachApp"]

SLASH_WORDS = ["/abort", "/commands", "/help", "/detach", *(f"/{name}" for name in SHARED)]


class _Suspend(Exception):
    """Takes the prompt down (a run started, something prints, a detach)."""


class AttachApp(SessionScreen):
    def __init__(
        self,
        link: Link,
        session: str,
        *,
        console: Console | None = None,
        input: Input | None = None,
        output: Output | None = None,
        history: int | None = 40,
        history_path: Path | None = None,
        show_thinking: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            link,
            lambda: session,
            by=f"attach {_user()}",
            console=console,
            input=input,
            output=output,
            show_thinking=show_thinking,
            clock=clock,
            keys_hint="Ctrl+C detaches · /abort stops the run",
        )
        self.link: Link = link
        self.session = session
        self.transcript = Transcript(self.renderer, clock, history=history)
        self.ops = RemoteOps(session, lambda: link.control, lambda: self._state)
        self.actions = AttachActions(
            self, TerminalUI(self.console, self.renderer, self.input, self.output), self.renderer.note
        )
        self.follower = Follower(link, session, self.transcript, self, self.approvals, clock=clock)
        self._state: SessionState | None = None
        self._connection: str | None = None
        self._wake = asyncio.Event()
        self._want_run = False
        self._run_shown = asyncio.Event()
        self._prompting = False
        self._print_requests = 0
        self._prompt_down = asyncio.Event()
        self._detach = asyncio.Event()
        self._fatal: str | None = None
        self.prompt = self.make_prompt(
            self._bindings(),
            self.ops.attachments,
            completer=WordCompleter(SLASH_WORDS, sentence=True, pattern=None),
            toolbar=self._toolbar,
            history_path=history_path,
            erase_when_done=True,
        )

    # --- keys and the status line ---------------------------------------------------------------

    def _bindings(self) -> KeyBindings:
        kb = self.prompt_keys(self.ops.attachments)

        @kb.add("c-c")
        def _ctrl_c(event: KeyPressEvent) -> None:
            event.app.exit(exception=EOFError())

        @kb.add("c-d")
        def _ctrl_d(event: KeyPressEvent) -> None:
            if not event.current_buffer.text:
                event.app.exit(exception=EOFError())

        return kb

    def _toolbar(self) -> StyleAndTextTuples:
        state = self._state
        model = (state.model if state is not None else None) or "(model unknown)"
        thinking = (state.thinking_level if state is not None else None) or "off"
        hint = self._connection or f"attached via {self.link.url}"
        usage = state.usage if state is not None else None
        if usage is not None and usage.context_tokens is not None and usage.context_window:
            hint = (
                f"context {format_tokens(usage.context_tokens)}/{format_tokens(usage.context_window)} · "
                + hint
            )
        if not self.renderer.show_thinking:
            hint += "  thinking hidden"
        return list(status_fragments(StatusInfo(model, thinking, self.session, UsageTotals(), hint)))

    # --- the Screen the follower drives ---------------------------------------------------------

    @contextlib.asynccontextmanager
    async def printing(self) -> AsyncIterator[None]:
        if not self._prompting:
            yield
            return
        self._print_requests += 1
        self._wake.set()
        try:
            await self._prompt_down.wait()
            yield
        finally:
            self._print_requests -= 1
            self._wake.set()

    async def enter_run(self) -> None:
        if self._want_run and self._run_shown.is_set():
            return
        self._want_run = True
        self._wake.set()
        await self._run_shown.wait()

    async def leave_run(self) -> None:
        if self._want_run:
            self._want_run = False
            self._wake.set()

    def show_state(self, state: SessionState) -> None:
        self._state = state
        self._invalidate()

    def show_change(self, data: dict[str, object]) -> None:
        if self._state is None:
            return
        model, thinking, name = data.get("model"), data.get("thinkingLevel"), data.get("name")
        self._state = dataclasses.replace(
            self._state,
            model=model if isinstance(model, str) else self._state.model,
            thinking_level=thinking if isinstance(thinking, str) else self._state.thinking_level,
            name=name if isinstance(name, str) else self._state.name,
        )
        self._invalidate()

    def show_pending(self, steering: tuple[str, ...], follow_up: tuple[str, ...]) -> None:
        self.renderer.pending = (steering, follow_up)

    def show_connection(self, problem: str | None) -> None:
        self._connection = problem
        self._invalidate()

    def note(self, text: str, style: str = "cyan") -> None:
        self.renderer.note(text, style)

    def _invalidate(self) -> None:
        if self._prompting and self.prompt.app.is_running:
            self.prompt.app.invalidate()

    # --- the main loop --------------------------------------------------------------------------

    async def run(self) -> int:
        """Attach until detached (0); AttachEnded when the serve cannot be reached, stops answering
        past its budget, refuses the token, or the session is deleted."""
        state = await self.follower.connect()
        self._banner(state)
        follower = asyncio.create_task(self._follow())
        try:
            with self.input.raw_mode():
                while not self._detach.is_set():
                    self._wake.clear()
                    if self._want_run:
                        await self._show_run()
                    else:
                        await self._show_prompt()
        finally:
            await self._close(follower)
        if self._fatal is not None:
            raise AttachEnded(self._fatal)
        return 0

    async def _follow(self) -> None:
        try:
            await self.follower.run()
        except AttachEnded as exc:
            self._fatal = exc.message
        finally:
            self._request_detach()

    async def _close(self, follower: asyncio.Task[None]) -> None:
        cancelled = [task for task in self.actions.own_runs if not task.done()]
        pending = {*cancelled, follower, *self.actions.tasks}
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=5)
        await self.approvals.settle()
        await self.link.aclose()
        if self._fatal is None:
            cut = "; the run it started was cancelled" if cancelled else ""
            self.console.print(Text(f"detached from {self.session}{cut}", "dim"))

    def _banner(self, state: SessionState) -> None:
        head = Text.assemble(
            ("fastagent attach", "bold"),
            (f" · {self.session} · {self.link.url} · {state.status}", "dim"),
        )
        self.console.print(head)
        if state.leaf_entry_id is None and state.status == "idle":
            self.console.print(
                Text(f"no record of {self.session!r} yet: a new session, or a typo?", "yellow")
            )
        self.console.print(Text(KEYS, "dim"))

    async def _show_prompt(self) -> None:
        if self._print_requests:  # asked while the last prompt was ending
            await self._let_print()
            return
        self.prompts_shown += 1
        self._prompting = True
        task = asyncio.create_task(self.prompt.prompt_async(default=self._draft))
        self._draft = ""
        try:
            while not task.done():
                self._wake.clear()
                if self._want_run or self._print_requests or self._detach.is_set():
                    self._draft = self.prompt.default_buffer.text
                    if self.prompt.app.is_running:
                        self.prompt.app.exit(exception=_Suspend())
                    await asyncio.wait({task})
                    break
                woke = asyncio.create_task(self._wake.wait())
                await asyncio.wait({task, woke}, return_when=asyncio.FIRST_COMPLETED)
                woke.cancel()
        finally:
            self._prompting = False
        try:
            text = task.result()
        except _Suspend:
            await self._let_print()
            return
        except (EOFError, KeyboardInterrupt):
            self._request_detach()
            return
        # Enter won the race with a print request: the line is sent, so it is no draft to restore
        # (else the next prompt came back holding it, and the next line typed joined it)
        self._draft = ""
        self.actions.line(text, "line")

    async def _let_print(self) -> None:
        """The prompt is down: let whoever asked print, until nobody needs to."""
        self._prompt_down.set()
        try:
            while self._print_requests and not self._detach.is_set():
                self._wake.clear()
                await self._wake.wait()
        finally:
            self._prompt_down.clear()

    async def _show_run(self) -> None:
        async with self.run_view(TurnComposer(self.actions.line), self._request_detach):
            self._run_shown.set()
            try:
                while True:
                    self._wake.clear()
                    if not self._want_run or self._detach.is_set():
                        break
                    await self._wake.wait()
            finally:
                self._run_shown.clear()

    @property
    def run_shown(self) -> bool:
        """A run is on the screen (a line typed now steers it)."""
        return self._want_run

    def request_detach(self) -> None:
        self._request_detach()

    def _request_detach(self) -> None:
        self._detach.set()
        self._wake.set()


def _user() -> str:
    """Who answers an approval from this terminal (the audit's ``attach <user>``)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "(unknown user)"
