"""The inline approval prompt of chat and ``attach``: a tool call waiting for a person is asked
under the run, ``y`` / ``n`` / ``a``, and answered through the session.

Requests come from the session's live events (``approval_requested``; ``approval_resolved`` takes
one away, whoever answered it: this terminal, the web chat, another attach, the expiry, an abort)
and from its state (``state().approvals``, read when attach connects: a request a restarted serve
still holds). They are asked one after another, oldest first, in the run view's live region, the
tool and its arguments shown as chat's tool line shows them:

* ``y`` approves; ``a`` approves and approves every later call of that tool in this session
  without asking (this terminal remembers it until it exits; the audit entry says ``always``);
* ``n`` asks for a reason (typed, Enter sends it, an empty one denies without a reason, Esc goes
  back to the question): the model reads it as the tool result.

Every answer is :meth:`~fastagent_cli.control.Session.answer_approval` on the session the app
follows (chat: the in-process hub; attach: ``POST /control/sessions/{id}/approvals/{aid}``), on
behalf of :attr:`ApprovalPrompt.by` (``chat``, ``attach <user>``), and every decision is printed
once, from its ``approval_resolved``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys
from rich.text import Text

from fastagent_cli.chat.render import ChatRenderer
from fastagent_cli.chat.tool_lines import summarize_args
from fastagent_cli.control import Decision, PendingApproval, Session, SessionEvent
from fastagent_cli.control.approvals import APPROVAL_CLOSED, NO_SUCH_APPROVAL

__all__ = ["ALWAYS_REASON", "ARGS_SHOWN", "ApprovalPrompt", "resolution_line"]

ARGS_SHOWN = 400
"""How much of the arguments the question shows (the tool line's format, less cut: it is what
the answer is about)."""
ALWAYS_REASON = "always for this session"

_FINAL = (APPROVAL_CLOSED, NO_SUCH_APPROVAL)
"""Refusals after which asking again is pointless."""


def resolution_line(data: Mapping[str, Any]) -> tuple[str, str]:
    """The line (and its style) an ``approval_resolved`` prints."""
    approved = data.get("decision") == "approved"
    mark, word = ("✓", "approved") if approved else ("✗", "denied")
    summary = summarize_args(data.get("args"))
    head = f"  {mark} {data.get('tool', 'tool')}{' ' + summary if summary else ''} {word}"
    cause = str(data.get("cause", "answer"))
    by = str(data.get("by", ""))
    who = f" by {by}" if cause == "answer" else f" ({cause})" if cause != "auto" else f" by {by} (auto)"
    reason = data.get("reason")
    tail = f": {reason}" if reason and not approved else f" ({reason})" if reason else ""
    return head + who + tail, "green" if approved else "yellow"


class ApprovalPrompt:
    """The approvals of the session an app shows, asked in ``renderer``'s live region."""

    def __init__(
        self,
        renderer: ChatRenderer,
        by: str,
        session: Callable[[], Session | None],
    ) -> None:
        self.renderer = renderer
        self.by = by
        """Who answers, for the audit (``chat``, ``attach <user>``)."""
        self._session = session
        self.pending: list[PendingApproval] = []
        """Waiting and not answered here yet, oldest first; the first one is asked."""
        self._always: set[tuple[str, str]] = set()
        """``(session, tool)`` approved with ``a``."""
        self._sent: set[str] = set()
        self._mode: Literal["ask", "reason"] = "ask"
        self._reason = ""
        self._escape = False
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def asking(self) -> bool:
        return bool(self.pending)

    # --- what arrives ---------------------------------------------------------------------------

    def feed(self, event: SessionEvent) -> None:
        """Take an ``approval_requested`` / ``approval_resolved`` (other events are ignored)."""
        if event.type == "approval_requested":
            try:
                self.add(PendingApproval.from_json(event.data))
            except ValueError:
                return
        elif event.type == "approval_resolved":
            ident = event.data.get("id")
            if isinstance(ident, str):
                self._drop(ident)
            self.renderer.note(*resolution_line(event.data))

    def sync(self, approvals: Iterable[PendingApproval]) -> None:
        """The state's list is the truth (a read after connecting): ask what it holds."""
        listed = {a.id: a for a in approvals}
        self.pending = [a for a in self.pending if a.id in listed]
        for approval in listed.values():
            self.add(approval)
        self._redraw()

    def add(self, request: PendingApproval) -> None:
        if request.id in self._sent or any(p.id == request.id for p in self.pending):
            return
        session = self._session()
        if session is not None and (session.id, request.tool) in self._always:
            self._sent.add(request.id)
            self._spawn(self._answer(request, "approve", ALWAYS_REASON))
            return
        self.pending.append(request)
        self._redraw()

    def _drop(self, ident: str) -> None:
        first = self.pending[0].id if self.pending else None
        self.pending = [p for p in self.pending if p.id != ident]
        if first == ident:
            self._mode, self._reason = "ask", ""
        self._redraw()

    def forget(self) -> None:
        """Another session is shown now (chat's ``/new``, ``/resume``): nothing of this one is asked."""
        self.pending = []
        self._mode, self._reason = "ask", ""
        self._redraw()

    # --- keys -----------------------------------------------------------------------------------

    def wrap(self, other: Callable[[KeyPress], bool]) -> Callable[[KeyPress], bool]:
        """A run view's key handler: the question takes the keys while there is one."""

        def on_key(press: KeyPress) -> bool:
            return self.key(press) if self.pending else other(press)

        return on_key

    def key(self, press: KeyPress) -> bool:
        """Take a key while asking (every key: none goes on to the composer meanwhile)."""
        if not self.pending:
            return False
        key = press.key
        escaped, self._escape = self._escape, False
        if self._mode == "reason":
            if key == Keys.Escape:
                self._escape = True
                self._mode, self._reason = "ask", ""
            elif key == Keys.ControlM and not escaped:
                self._decide("deny", self._reason.strip() or None)
            elif key == Keys.BracketedPaste:
                self._reason += " ".join(press.data.split())
            elif key == Keys.ControlH:
                self._reason = self._reason[:-1]
            elif key == Keys.ControlU:
                self._reason = ""
            elif isinstance(key, str) and len(key) == 1 and key.isprintable():
                self._reason += key
            self._redraw()
            return True
        letter = key.lower() if isinstance(key, str) and len(key) == 1 else ""
        if letter == "y":
            self._decide("approve", None)
        elif letter == "a":
            session = self._session()
            if session is not None:
                self._always.add((session.id, self.pending[0].tool))
            self._decide("approve", ALWAYS_REASON)
        elif letter == "n":
            self._mode, self._reason = "reason", ""
            self._redraw()
        return True

    def _decide(self, decision: Decision, reason: str | None) -> None:
        request = self.pending.pop(0)
        self._mode, self._reason = "ask", ""
        self._sent.add(request.id)
        self._spawn(self._answer(request, decision, reason))
        if reason == ALWAYS_REASON:  # the same tool waiting further down: approved as well
            for other in [p for p in self.pending if p.tool == request.tool]:
                self.pending.remove(other)
                self._sent.add(other.id)
                self._spawn(self._answer(other, "approve", ALWAYS_REASON))
        self._redraw()

    # --- answering ------------------------------------------------------------------------------

    async def _answer(self, request: PendingApproval, decision: Decision, reason: str | None) -> None:
        session = self._session()
        if session is None:
            self.renderer.note(f"✗ not connected: {request.tool} is still waiting", "red")
            self._retry(request)
            return
        result = await session.answer_approval(request.id, decision, by=self.by, reason=reason)
        if result.ok or result.error is None:
            return
        self.renderer.note(f"✗ {request.tool}: {result.error.message}", "red")
        if result.error.code not in _FINAL:
            self._retry(request)

    def _retry(self, request: PendingApproval) -> None:
        """The answer did not land (the connection): ask again."""
        self._sent.discard(request.id)
        self.pending.insert(0, request)
        self._redraw()

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the answers sent (a turn's end, a detach)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- the question ---------------------------------------------------------------------------

    def _redraw(self) -> None:
        self.renderer.question = self.lines()
        self.renderer.refresh()

    def lines(self) -> list[Text]:
        """The question under the run (none when nothing waits)."""
        if not self.pending:
            return []
        request = self.pending[0]
        more = f"  (1 of {len(self.pending)})" if len(self.pending) > 1 else ""
        head = Text.assemble(("  ? ", "bold yellow"), ("approve ", "yellow"), (request.tool, "bold"))
        summary = summarize_args(request.args, ARGS_SHOWN)
        if summary:
            head.append(" " + summary, "dim")
        head.append(more, "dim")
        if self._mode == "reason":
            ask = Text.assemble(
                ("  reason for the model (Enter denies, empty for none, Esc back): ", "yellow"),
                self._reason,
                ("▏", "dim"),
            )
        else:
            ask = Text.assemble(
                ("  [y] yes · [n] no (then a reason) · [a] always ", "yellow"),
                (request.tool, "bold yellow"),
                (" in this session", "yellow"),
            )
        return [head, ask]
