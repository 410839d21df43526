"""One run of chat's own on the screen, drawn from the session's live events.

The terminal chat subscribes to its session before it starts a run; :meth:`RunView.show` takes
each event: the conversation goes through the :class:`~fastagent_cli.chat.transcript.Transcript`
(the one place an event kind becomes lines, shared with ``attach``), the queue of steers and
follow-ups to the live region's status. The run's invoke stream only drives it (Ctrl+C closes
it: :meth:`RunView.interrupt`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fastagent_cli.chat.approval_prompt import ApprovalPrompt
from fastagent_cli.chat.render import ChatRenderer
from fastagent_cli.chat.tool_lines import ToolLog
from fastagent_cli.chat.transcript import Transcript
from fastagent_cli.control import (
    Session,
    SessionEvent,
    SessionEventsClosed,
    SessionEventStream,
    pending_labels,
)

__all__ = ["RunView"]


class RunView:
    """One run on the chat's screen, from the session's events: the conversation through the
    transcript, the queue of steers and follow-ups on the status of the live region."""

    def __init__(
        self,
        renderer: ChatRenderer,
        clock: Callable[[], float],
        tools: ToolLog,
        approvals: ApprovalPrompt | None = None,
    ) -> None:
        self.renderer = renderer
        self.approvals = approvals
        self.transcript = Transcript(renderer, clock, tools=tools, aborted="⏹ interrupted")
        self.transcript.prompt_typed()  # the run opens with the prompt typed on the screen
        self.started = False
        self.settled = False
        self.lost = False
        """The event stream ended before the run did (a watcher too far behind is closed)."""

    def interrupt(self, task: asyncio.Task[None]) -> None:
        """Ctrl+C: close the run's invoke stream (which aborts it)."""
        self.transcript.interrupting()
        task.cancel()

    async def follow(self, events: SessionEventStream) -> None:
        try:
            async for event in events:
                self.show(event)
        except SessionEventsClosed:
            self.lost = True

    async def catch_up(self, session: Session) -> None:
        """Show from the record what the closed stream did not deliver."""
        self.transcript.show_entries(await session.entries(since=self.transcript.cursor))
        self.renderer.pending = ((), ())

    def show(self, event: SessionEvent) -> None:
        kind = event.type
        if kind == "run_started":
            self.started = True
        elif kind == "queue_changed":
            self.renderer.pending = pending_labels(event.data)
            return
        elif kind == "run_settled":
            self.settled = True
            self.renderer.pending = ((), ())
        if self.approvals is not None:
            self.approvals.feed(event)
        self.transcript.feed(event)  # subscribed before the run: no start is missed, no read needed
