"""What chat and ``attach`` are on the terminal, once: a :class:`SessionScreen` over a
:class:`~fastagent_cli.chat.session_link.SessionLink` (local for chat, remote for attach) holds the
renderer, the inline approval prompt, the ``›`` prompt with its attachment chip, and the run view
(the live region, the composer under it, the keys while a run is shown).

The one app over it is :class:`~fastagent_cli.chat.app.SessionApp` (one main loop); what differs
between chat and attach (who drives the runs, whether the session is followed while idle) is the
app's side (:class:`~fastagent_cli.chat.chat_side.ChatSide`,
:class:`~fastagent_cli.chat.attach.side.AttachSide`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input, create_input
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.output import Output, create_output
from rich.console import Console

from fastagent_cli.chat.approval_prompt import ApprovalPrompt
from fastagent_cli.chat.attachments import PendingAttachments, bind_paste, prompt_message
from fastagent_cli.chat.composer import TurnComposer
from fastagent_cli.chat.prompt_setup import chat_prompt, composer_keys, prompt_bindings, tick, toggle_thinking
from fastagent_cli.chat.render import ChatRenderer
from fastagent_cli.chat.session_link import SessionLink
from fastagent_cli.chat.turn_keys import watch_turn_keys
from fastagent_cli.control import Session

__all__ = ["SessionScreen"]


class SessionScreen:
    """The screen of one session (``session_id()``: the one shown now) reached through ``link``;
    ``by`` answers its approvals."""

    def __init__(
        self,
        link: SessionLink,
        session_id: Callable[[], str],
        *,
        by: str,
        console: Console | None,
        input: Input | None,
        output: Output | None,
        show_thinking: bool,
        clock: Callable[[], float] = time.monotonic,
        keys_hint: str = "Ctrl+C interrupts",
    ) -> None:
        self.link = link
        self._session_id = session_id
        self.console = console or Console(highlight=False)
        self.input = input or create_input()
        self.output = output or create_output()
        self.renderer = ChatRenderer(
            self.console, show_thinking=show_thinking, clock=clock, keys_hint=keys_hint
        )
        self.approvals = ApprovalPrompt(self.renderer, by, self.control_session)
        """Tool calls of the session's runs that wait for an answer, asked under the run."""
        self.prompts_shown = 0
        """How many times the main prompt was shown (hosts and tests wait on it)."""
        self._draft = ""
        """Text typed under the last run and not sent: the next prompt (or run view) starts with it."""

    def control_session(self) -> Session | None:
        """The session shown, on its hub (``None`` while a remote link is not connected)."""
        control = self.link.control
        return control.sessions.get(self._session_id()) if control is not None else None

    # --- the prompt -----------------------------------------------------------------------------

    def prompt_keys(self, attachments: PendingAttachments) -> KeyBindings:
        """The prompt keys both hosts have, a pasted image or PDF path attaching it; add the rest."""
        kb = prompt_bindings(self.renderer)
        bind_paste(kb, attachments)
        return kb

    def make_prompt(
        self,
        kb: KeyBindings,
        attachments: PendingAttachments,
        *,
        completer: Completer,
        toolbar: Callable[[], StyleAndTextTuples],
        history_path: Path | None,
        **extra: Any,
    ) -> PromptSession[str]:
        prompt: PromptSession[str] = chat_prompt(
            key_bindings=kb,
            history_path=history_path,
            completer=completer,
            toolbar=toolbar,
            input=self.input,
            output=self.output,
            **extra,
        )
        prompt.message = lambda: prompt_message(attachments)  # the attachments' chip above ›
        return prompt

    # --- the run view ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def run_view(self, composer: TurnComposer, on_interrupt: Callable[[], None]) -> AsyncIterator[None]:
        """Show a run: the live region redrawn, typing going to ``composer`` (or to an approval
        being asked), Ctrl+C calling ``on_interrupt``, Ctrl+T toggling thinking."""
        composer.text, self._draft = self._draft, ""
        self.renderer.begin_turn()
        self.renderer.composer = composer.text
        ticker = asyncio.create_task(tick(self.renderer))
        try:
            with watch_turn_keys(
                self.input,
                on_interrupt,
                self.toggle_thinking,
                self.approvals.wrap(composer_keys(composer, self.renderer)),
            ):
                yield
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
            self.renderer.end_turn()
            self._draft = composer.take()

    def toggle_thinking(self) -> None:
        toggle_thinking(self.renderer)
