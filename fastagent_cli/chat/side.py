"""What chat and ``attach`` do differently on the one app
(:class:`~fastagent_cli.chat.app.SessionApp`): a :class:`Side`, the small strategy that comes with
the session link. Its data says how the screen looks (who answers approvals, the keys named under
a run, whether the prompt is erased once sent, whether log warnings become notes); its hooks are
what the app's one loop calls (the banner, a line typed on the prompt or under a run, Ctrl+C under
a run, how long the run view stays, the end).

* :class:`~fastagent_cli.chat.chat_side.ChatSide`: a local link; it starts and drives its runs;
* :class:`~fastagent_cli.chat.attach.side.AttachSide`: a remote link; it follows the session's
  runs, whoever starts them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from prompt_toolkit.completion import Completer
from prompt_toolkit.key_binding import KeyBindings

from fastagent_cli.chat.attachments import PendingAttachments
from fastagent_cli.chat.composer import ActionKind
from fastagent_cli.chat.session_link import SessionLink
from fastagent_cli.chat.status import StatusInfo

if TYPE_CHECKING:
    from fastagent_cli.chat.app import SessionApp

__all__ = ["Side"]


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
