"""What the user types while an answer streams: Enter steers the run, Alt+Enter queues a follow-up.

The keys come raw from the terminal (:mod:`.turn_keys`): printable keys and pastes are text,
Backspace deletes, Ctrl+U clears, Ctrl+J inserts a newline, Enter sends the text as a *steer*
(delivered after the current tool batch, before the next model call), Esc Enter (Alt+Enter) as a
*follow-up* (answered after this answer). Whatever is typed and not sent when the turn ends
becomes the next prompt's text; keys the composer has no use for (Ctrl+D, arrows...) are left
for the next prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias

from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys

__all__ = ["ActionKind", "TurnComposer"]

ActionKind: TypeAlias = Literal["steer", "follow_up"]


class TurnComposer:
    def __init__(self, submit: Callable[[str, ActionKind], None]) -> None:
        self.text = ""
        self._submit = submit
        self._escape = False

    def feed(self, press: KeyPress) -> bool:
        """Take a key; ``False`` when the composer has no use for it."""
        key = press.key
        escaped, self._escape = self._escape, False
        if key == Keys.BracketedPaste:
            self.text += press.data.replace("\r\n", "\n").replace("\r", "\n")
        elif key == Keys.Escape:
            self._escape = True
        elif key == Keys.ControlM:
            self._send("follow_up" if escaped else "steer")
        elif key == Keys.ControlJ:
            self.text += "\n"
        elif key == Keys.ControlH:
            self.text = self.text[:-1]
        elif key == Keys.ControlU:
            self.text = ""
        elif isinstance(key, str) and len(key) == 1 and key.isprintable() and not escaped:
            self.text += key
        else:
            return False
        return True

    def _send(self, kind: ActionKind) -> None:
        text = self.text.strip()
        if text:
            self.text = ""
            self._submit(text, kind)

    def take(self) -> str:
        """The unsent text (the next prompt starts with it); the composer is empty afterwards."""
        text, self.text = self.text, ""
        return text
