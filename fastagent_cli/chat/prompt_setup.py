"""What the chat and ``fastagent attach`` share on screen: the prompt (history, keys, status
toolbar, style) and the turn view's composer keys, spinner tick and thinking toggle.

Keys every prompt has: Enter sends; Alt+Enter (Esc Enter) or Ctrl+J inserts a newline; Ctrl+T
shows or hides thinking. Each host adds what differs (Ctrl+C, Ctrl+D) to the same bindings.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPress, KeyPressEvent
from prompt_toolkit.output import Output

from fastagent_cli.chat.composer import TurnComposer
from fastagent_cli.chat.render import ChatRenderer
from fastagent_cli.chat.status import STYLE
from fastagent_cli.state.atomic import make_private_dir

__all__ = ["TICK_S", "chat_prompt", "composer_keys", "prompt_bindings", "tick", "toggle_thinking"]

TICK_S = 0.08
"""How often the turn view is redrawn (spinner, elapsed time)."""


def prompt_bindings(renderer: ChatRenderer) -> KeyBindings:
    """The prompt keys both hosts have (Enter, Alt+Enter / Ctrl+J, Ctrl+T); add the rest to it."""
    kb = KeyBindings()

    @kb.add("enter")
    def _send(event: KeyPressEvent) -> None:
        event.current_buffer.validate_and_handle()

    @kb.add("escape", "enter")
    @kb.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("c-t")
    def _toggle(event: KeyPressEvent) -> None:
        renderer.toggle_thinking()
        event.app.invalidate()

    return kb


def chat_prompt(
    *,
    key_bindings: KeyBindings,
    history_path: Path | None,
    completer: Completer,
    toolbar: Callable[[], StyleAndTextTuples],
    input: Input,
    output: Output,
    **extra: Any,
) -> PromptSession[str]:
    """The multi-line ``›`` prompt with completion while typing, the status toolbar and the
    history kept in ``history_path`` (its folder created private), or in memory."""
    history: History = InMemoryHistory()
    if history_path is not None:
        make_private_dir(history_path.parent)  # the state root: 0700 when it is created here
        history = FileHistory(str(history_path))
    return PromptSession(
        message=[("class:prompt", "› ")],
        multiline=True,
        prompt_continuation="  ",
        key_bindings=key_bindings,
        history=history,
        completer=completer,
        complete_while_typing=True,
        bottom_toolbar=toolbar,
        style=STYLE,
        input=input,
        output=output,
        **extra,
    )


def composer_keys(composer: TurnComposer, renderer: ChatRenderer) -> Callable[[KeyPress], bool]:
    """The turn view's key handler: typing goes to ``composer``, shown under the answer."""

    def on_key(press: KeyPress) -> bool:
        taken = composer.feed(press)
        renderer.composer = composer.text
        renderer.refresh()
        return taken

    return on_key


async def tick(renderer: ChatRenderer) -> None:
    """Redraw the turn view every :data:`TICK_S` until cancelled."""
    while True:
        await asyncio.sleep(TICK_S)
        with contextlib.suppress(Exception):  # a resize race must not end the view
            renderer.refresh()


def toggle_thinking(renderer: ChatRenderer) -> None:
    """Ctrl+T during a turn: show or hide thinking, redrawn at once."""
    renderer.toggle_thinking()
    renderer.refresh()
