"""Keys while a turn runs: Ctrl+C interrupts, Ctrl+T toggles thinking, the rest goes to a handler.

Between prompts nothing would read the terminal, so Ctrl+C would be a signal and typed text would
echo into the streaming answer. Instead the prompt's own input is put in raw mode and read here:
Ctrl+C and Ctrl+T act at once, and every other key goes to ``on_key`` (the chat's
:class:`~fastagent_cli.chat.composer.TurnComposer`: typing while an answer streams steers it).
Keys the handler does not take (it answers ``False``), or all keys without a handler, are stored
as prompt-toolkit type-ahead for the next prompt (a Ctrl+D typed during a turn exits after it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from prompt_toolkit.input import Input
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys

__all__ = ["watch_turn_keys"]

_DROP = {Keys.CPRResponse, Keys.Vt100MouseEvent, Keys.WindowsMouseEvent, Keys.Ignore}


@contextmanager
def watch_turn_keys(
    inp: Input,
    on_interrupt: Callable[[], None],
    on_toggle_thinking: Callable[[], None],
    on_key: Callable[[KeyPress], bool] | None = None,
) -> Iterator[None]:
    def handle(keys: list[KeyPress]) -> None:
        keep: list[KeyPress] = []
        for press in keys:
            if press.key == Keys.ControlC:
                on_interrupt()
            elif press.key == Keys.ControlT:
                on_toggle_thinking()
            elif press.key in _DROP:
                continue
            elif on_key is None or not on_key(press):
                keep.append(press)
        if keep:
            store_typeahead(inp, keep)

    def ready() -> None:
        handle(inp.read_keys())

    handle(get_typeahead(inp))  # keys read ahead by the prompt (e.g. Ctrl+C typed right after Enter)
    with ExitStack() as stack:
        stack.enter_context(inp.raw_mode())
        try:
            stack.enter_context(inp.attach(ready))
        except EOFError:  # the input cannot be watched (closed, /dev/null): the turn runs unwatched
            pass
        try:
            yield
        finally:
            if not inp.closed:
                handle(inp.flush_keys())
