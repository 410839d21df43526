"""The one terminal app of ``fastagent chat`` and ``fastagent attach``: :class:`SessionApp`, one
main loop over a session link, on the :class:`~fastagent_cli.chat.screen.SessionScreen`.

The loop shows the prompt while the session is idle on the screen and the run view while a run
is (:attr:`SessionApp.showing_run`). What differs between the two commands is the app's
:class:`Side`, a small strategy that comes with the link:

* chat's (:class:`~fastagent_cli.chat.chat_side.ChatSide`, a local link: the in-process hub): a
  typed line is a command or starts a run, which the side drives (its invoke stream) and shows
  from the session's events; the run view lasts as long as that run, Ctrl+C interrupts it; on the
  prompt Ctrl+C clears, twice exits; a steer that came too late is the next prompt;
* attach's (:class:`~fastagent_cli.chat.attach.side.AttachSide`, a remote link over
  ``/control``): it follows the session's events while idle too, so the run view comes and goes
  as they say, whoever started the run; a typed line is handled in the background; Ctrl+C
  detaches; the prompt is erased once sent (the session's events print the line).

Either way the prompt can be taken down for something to print (:meth:`SessionApp.printing`) and
comes back with what was typed in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Protocol

from prompt_toolkit.completion import Completer
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.output import Output
from rich.console import Console
from rich.text import Text

from fastagent_cli.chat.attachments import PendingAttachments
from fastagent_cli.chat.composer import ActionKind, TurnComposer
from fastagent_cli.chat.log_notes import warnings_as_notes
from fastagent_cli.chat.screen import SessionScreen
from fastagent_cli.chat.session_link import SessionLink
from fastagent_cli.chat.status import StatusInfo, status_fragments
from fastagent_cli.chat.terminal_ui import TerminalUI

__all__ = ["Mounted", "SessionApp", "Side"]


class Side(Protocol):
    """What chat and attach do differently on the one app: data, then the hooks its loop calls."""

    @property
    def link(self) -> SessionLink: ...

    by: str
    """Who answers the approvals asked on this screen."""
    keys_hint: str
    """The keys named under a run."""
    erase_prompt: bool
    """The prompt is erased once sent (attach: the session's events print the line)."""
    notes_from_log: bool
    """``fastagent.*`` warnings are printed as notes in the conversation (chat)."""
    clock: Callable[[], float]
    attachments: PendingAttachments

    @property
    def session_id(self) -> str:
        """The session shown now."""
        ...

    def add_keys(self, kb: KeyBindings) -> None:
        """The prompt keys of this side (Ctrl+C, Ctrl+D) added to the shared ones."""
        ...

    def completer(self) -> Completer: ...

    def mount(self, app: SessionApp) -> None:
        """Called once, when the app (its screen and prompt) exists."""
        ...

    def status(self) -> StatusInfo: ...

    async def open(self) -> None:
        """Before the loop: connect or load, print the banner."""
        ...

    def queued(self) -> str | None:
        """A prompt to send instead of reading one (a steer that came too late)."""
        ...

    async def start(self, text: str) -> None:
        """Send ``text`` as the next prompt."""
        ...

    async def line(self, text: str) -> None:
        """A line entered on the prompt."""
        ...

    def submit(self, text: str, kind: ActionKind) -> None:
        """A line entered under a run (the composer's Enter or Alt+Enter)."""
        ...

    def interrupt(self) -> None:
        """Ctrl+C under a run."""
        ...

    async def during_run(self) -> None:
        """While the run view is up; returns when it should come down."""
        ...

    async def close(self) -> None:
        """After the loop."""
        ...

    def ended(self) -> int:
        """The exit code, or raise what ended the app."""
        ...


class Mounted:
    """What both sides keep of the app that mounted them (:meth:`Side.mount` calls ``super()``)."""

    _app: SessionApp | None = None

    @property
    def app(self) -> SessionApp:
        assert self._app is not None, "mounted by the app"
        return self._app

    def mount(self, app: SessionApp) -> None:
        self._app = app


class _Suspend(Exception):
    """Takes the prompt down (a run started, something prints, the end)."""


class SessionApp(SessionScreen):
    def __init__(
        self,
        side: Side,
        *,
        console: Console | None = None,
        input: Input | None = None,
        output: Output | None = None,
        history_path: Path | None = None,
        show_thinking: bool = True,
    ) -> None:
        super().__init__(
            side.link,
            lambda: side.session_id,
            by=side.by,
            console=console,
            input=input,
            output=output,
            show_thinking=show_thinking,
            clock=side.clock,
            keys_hint=side.keys_hint,
        )
        self.side = side
        self.ui = TerminalUI(self.console, self.renderer, self.input, self.output)
        self.showing_run = False
        """A run is (to be) on the screen: the loop shows the run view, a line typed steers it."""
        self._run_shown = asyncio.Event()
        self._wake = asyncio.Event()
        self._ended = asyncio.Event()
        self._prompting = False
        self._print_requests = 0
        self._prompt_down = asyncio.Event()
        kb = self.prompt_keys(side.attachments)
        side.add_keys(kb)
        self.prompt = self.make_prompt(
            kb,
            side.attachments,
            completer=side.completer(),
            toolbar=self._toolbar,
            history_path=history_path,
            **({"erase_when_done": True} if side.erase_prompt else {}),
        )
        side.mount(self)

    def _toolbar(self) -> StyleAndTextTuples:
        info = self.side.status()
        if not self.renderer.show_thinking:
            info = dataclasses.replace(info, hint=(info.hint + "  thinking hidden").strip())
        return list(status_fragments(info))

    def invalidate(self) -> None:
        """Redraw the prompt's status line (when the prompt is up)."""
        if self._prompting and self.prompt.app.is_running:
            self.prompt.app.invalidate()

    # --- the main loop --------------------------------------------------------------------------

    async def run(self) -> int:
        await self.side.open()
        try:
            # The terminal stays raw for the whole app, not only while a prompt or a run reads it:
            # keys typed in between are neither echoed into the output nor turned from Enter (\r)
            # into Ctrl+J (\n) by the tty; they wait as type-ahead for the next prompt.
            notes: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
            if self.side.notes_from_log:
                notes = warnings_as_notes(self.renderer)
            with self.input.raw_mode(), notes:
                while not self._ended.is_set():
                    self._wake.clear()
                    if self.showing_run:
                        await self._show_run()
                    else:
                        await self._show_prompt()
        finally:
            await self.side.close()
        return self.side.ended()

    def end(self) -> None:
        """Leave the loop (exit, detach) once what is on the screen comes down."""
        self._ended.set()
        self._wake.set()

    async def _show_prompt(self) -> None:
        if self._print_requests:  # asked while the last prompt was ending
            await self._let_print()
            return
        self.prompts_shown += 1
        queued = self.side.queued()
        if queued is not None:
            self.console.print(Text(f"› {queued}", "bold"))
            await self.side.start(queued)
            return
        self._prompting = True
        task = asyncio.create_task(self.prompt.prompt_async(default=self._draft))
        self._draft = ""
        try:
            while not task.done():
                self._wake.clear()
                if self.showing_run or self._print_requests or self._ended.is_set():
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
            self.end()
            return
        # Enter won the race with a print request: the line is sent, so it is no draft to restore
        # (else the next prompt came back holding it, and the next line typed joined it)
        self._draft = ""
        # Nothing awaits between a side starting a run here and the run view coming up at the top
        # of the loop: a key read ahead (Ctrl+C right after Enter) finds the run to interrupt.
        await self.side.line(text)

    async def _let_print(self) -> None:
        """The prompt is down: let whoever asked print, until nobody needs to."""
        self._prompt_down.set()
        try:
            while self._print_requests and not self._ended.is_set():
                self._wake.clear()
                await self._wake.wait()
        finally:
            self._prompt_down.clear()

    async def _show_run(self) -> None:
        async with self.run_view(TurnComposer(self.side.submit), self.side.interrupt):
            self._run_shown.set()
            try:
                await self.side.during_run()
            finally:
                self._run_shown.clear()

    async def until_run_left(self) -> None:
        """Wait while the run view should stay up (:meth:`leave_run` or :meth:`end` takes it down)."""
        while self.showing_run and not self._ended.is_set():
            self._wake.clear()
            await self._wake.wait()

    # --- what a side (and attach's follower) drives ---------------------------------------------

    @contextlib.asynccontextmanager
    async def printing(self) -> AsyncIterator[None]:
        """Hold the prompt down while the body prints (a no-op while a run is shown)."""
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

    def show_run(self) -> None:
        """Show the run view at the loop's next turn (the side that calls it is in the loop)."""
        self.showing_run = True

    async def enter_run(self) -> None:
        """Bring the run view up from outside the loop, and wait until it is."""
        if self.showing_run and self._run_shown.is_set():
            return
        self.showing_run = True
        self._wake.set()
        await self._run_shown.wait()

    async def leave_run(self) -> None:
        if self.showing_run:
            self.showing_run = False
            self._wake.set()
