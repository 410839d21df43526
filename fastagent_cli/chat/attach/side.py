"""Attach's :class:`~fastagent_cli.chat.app.Side` of the one app: a remote link (``/control``),
runs that come from the session's live events (whoever started them: a channel, a schedule,
another client, this attach), so the screen switches between the prompt (idle) and the run view
as the events say.

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
import dataclasses
import getpass
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from prompt_toolkit.completion import Completer, WordCompleter
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.text import Text

from fastagent_cli.chat.app import Mounted, SessionApp
from fastagent_cli.chat.attach.actions import KEYS, AttachActions
from fastagent_cli.chat.attach.follow import AttachEnded, Follower
from fastagent_cli.chat.attach.link import Link
from fastagent_cli.chat.attach.ops import RemoteOps
from fastagent_cli.chat.composer import ActionKind
from fastagent_cli.chat.session_commands import SHARED
from fastagent_cli.chat.status import StatusInfo, UsageTotals, format_tokens
from fastagent_cli.chat.transcript import Transcript
from fastagent_cli.control import SessionState

__all__ = ["SLASH_WORDS", "AttachSide"]

SLASH_WORDS = ["/abort", "/commands", "/help", "/detach", *(f"/{name}" for name in SHARED)]


class AttachSide(Mounted):
    keys_hint = "Ctrl+C detaches · /abort stops the run"
    erase_prompt = True
    notes_from_log = False

    def __init__(
        self,
        link: Link,
        session: str,
        *,
        history: int | None = 40,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.link: Link = link
        self.session = session
        """The session attached to (what the actions act on)."""
        self.history = history
        self.clock = clock
        self.by = f"attach {_user()}"
        self.ops = RemoteOps(session, lambda: link.control, lambda: self._state)
        self.attachments = self.ops.attachments
        self._state: SessionState | None = None
        self._connection: str | None = None
        self._fatal: str | None = None
        self._follower_task: asyncio.Task[None] | None = None

    @property
    def session_id(self) -> str:
        return self.session

    def mount(self, app: SessionApp) -> None:
        super().mount(app)
        self.transcript = Transcript(app.renderer, self.clock, history=self.history)
        self.actions = AttachActions(self, app.ui, app.renderer.note)
        self.follower = Follower(
            self.link, self.session, self.transcript, self, app.approvals, clock=self.clock
        )

    # --- keys and the status line ---------------------------------------------------------------

    def add_keys(self, kb: KeyBindings) -> None:
        @kb.add("c-c")
        def _ctrl_c(event: KeyPressEvent) -> None:
            event.app.exit(exception=EOFError())

        @kb.add("c-d")
        def _ctrl_d(event: KeyPressEvent) -> None:
            if not event.current_buffer.text:
                event.app.exit(exception=EOFError())

    def completer(self) -> Completer:
        return WordCompleter(SLASH_WORDS, sentence=True, pattern=None)

    def status(self) -> StatusInfo:
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
        return StatusInfo(model, thinking, self.session, UsageTotals(), hint)

    # --- the host of the actions and the screen of the follower ---------------------------------

    def printing(self) -> AbstractAsyncContextManager[None]:
        return self.app.printing()

    @property
    def run_shown(self) -> bool:
        """A run is on the screen (a line typed now steers it)."""
        return self.app.showing_run

    def request_detach(self) -> None:
        self.app.end()

    async def enter_run(self) -> None:
        await self.app.enter_run()

    async def leave_run(self) -> None:
        await self.app.leave_run()

    def show_state(self, state: SessionState) -> None:
        self._state = state
        self.app.invalidate()

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
        self.app.invalidate()

    def show_pending(self, steering: tuple[str, ...], follow_up: tuple[str, ...]) -> None:
        self.app.renderer.pending = (steering, follow_up)

    def show_connection(self, problem: str | None) -> None:
        self._connection = problem
        self.app.invalidate()

    def note(self, text: str, style: str = "cyan") -> None:
        self.app.renderer.note(text, style)

    # --- the app's hooks ------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect (AttachEnded when the serve cannot be reached within the start-up budget),
        print the banner and follow the session's events until detached."""
        state = await self.follower.connect()
        self._banner(state)
        self._follower_task = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        try:
            await self.follower.run()
        except AttachEnded as exc:
            self._fatal = exc.message
        finally:
            self.app.end()

    def _banner(self, state: SessionState) -> None:
        console = self.app.console
        head = Text.assemble(
            ("fastagent attach", "bold"),
            (f" · {self.session} · {self.link.url} · {state.status}", "dim"),
        )
        console.print(head)
        if state.leaf_entry_id is None and state.status == "idle":
            console.print(Text(f"no record of {self.session!r} yet: a new session, or a typo?", "yellow"))
        console.print(Text(KEYS, "dim"))

    def queued(self) -> str | None:
        return None

    async def start(self, text: str) -> None:
        self.actions.line(text, "line")

    async def line(self, text: str) -> None:
        self.actions.line(text, "line")

    def submit(self, text: str, kind: ActionKind) -> None:
        self.actions.line(text, kind)

    def interrupt(self) -> None:
        self.app.end()

    async def during_run(self) -> None:
        await self.app.until_run_left()

    async def close(self) -> None:
        cancelled = [task for task in self.actions.own_runs if not task.done()]
        pending = {*cancelled, *self.actions.tasks}
        if self._follower_task is not None:
            pending.add(self._follower_task)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5)
        await self.app.approvals.settle()
        await self.link.aclose()
        if self._fatal is None:
            cut = "; the run it started was cancelled" if cancelled else ""
            self.app.console.print(Text(f"detached from {self.session}{cut}", "dim"))

    def ended(self) -> int:
        if self._fatal is not None:
            raise AttachEnded(self._fatal)
        return 0


def _user() -> str:
    """Who answers an approval from this terminal (the audit's ``attach <user>``)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "(unknown user)"
