"""The approval prompt's bookkeeping, on a fake session: what is asked, in which order, what an
answer elsewhere takes away, what ``a`` approves later, what a failed answer does."""

from __future__ import annotations

import io
from typing import Any

from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys
from rich.console import Console

from fastagent_cli.chat.approval_prompt import ALWAYS_REASON, ApprovalPrompt, resolution_line
from fastagent_cli.chat.render import ChatRenderer
from fastagent_cli.control import ActionResult, PendingApproval, SessionEvent, accepted, rejected
from fastagent_cli.control.approvals import APPROVAL_CLOSED
from fastagent_cli.remote import REQUEST_FAILED


class FakeSession:
    id = "s1"

    def __init__(self) -> None:
        self.answers: list[tuple[str, str, str, str | None]] = []
        self.next: list[ActionResult] = []

    async def answer_approval(
        self, approval_id: str, decision: str, *, by: str, reason: str | None = None
    ) -> ActionResult:
        self.answers.append((approval_id, decision, by, reason))
        return self.next.pop(0) if self.next else accepted("r1")


def _request(ident: str, tool: str = "deploy", env: str = "prod") -> dict[str, Any]:
    return {"id": ident, "toolCallId": f"c_{ident}", "tool": tool, "args": {"env": env}, "requestedAt": 1}


def _prompt() -> tuple[ApprovalPrompt, FakeSession, io.StringIO]:
    out = io.StringIO()
    renderer = ChatRenderer(Console(file=out, width=100, color_system=None))
    session = FakeSession()
    return ApprovalPrompt(renderer, "chat", lambda: session), session, out  # type: ignore[arg-type,return-value]


def _keys(prompt: ApprovalPrompt, text: str) -> None:
    for char in text:
        key = Keys.ControlM if char == "\r" else Keys.Escape if char == "\x1b" else char
        assert prompt.key(KeyPress(key, char))


async def test_pending_are_asked_in_order_and_an_answer_elsewhere_takes_one_away() -> None:
    prompt, session, out = _prompt()
    for ident, env in (("a1", "prod"), ("a2", "staging"), ("a3", "dev")):
        prompt.feed(SessionEvent("approval_requested", _request(ident, env=env)))
    assert [line.plain for line in prompt.lines()][0] == "  ? approve deploy env=prod  (1 of 3)"
    prompt.feed(SessionEvent("approval_resolved", {**_request("a1"), "decision": "approved", "by": "web"}))
    assert "✓ deploy env=prod approved by web" in out.getvalue()
    assert prompt.lines()[0].plain == "  ? approve deploy env=staging  (1 of 2)"
    _keys(prompt, "nno\x1b")  # a reason started, then Esc: back to the question, nothing sent
    assert "[y] yes" in prompt.lines()[1].plain
    _keys(prompt, "n\r")  # an empty reason denies without one
    _keys(prompt, "y")
    await prompt.settle()
    assert session.answers == [("a2", "deny", "chat", None), ("a3", "approve", "chat", None)]
    assert not prompt.asking and prompt.lines() == []
    prompt.feed(SessionEvent("approval_requested", _request("a3")))  # answered here: not asked again
    assert not prompt.asking


async def test_always_answers_later_requests_of_that_tool_in_that_session_only() -> None:
    prompt, session, _ = _prompt()
    prompt.feed(SessionEvent("approval_requested", _request("a1")))
    prompt.feed(SessionEvent("approval_requested", _request("a2", tool="bash")))
    _keys(prompt, "a")
    assert prompt.lines()[0].plain.startswith("  ? approve bash")  # another tool is still asked
    prompt.feed(SessionEvent("approval_requested", _request("a3")))
    await prompt.settle()
    assert [a[0] for a in session.answers] == ["a1", "a3"]
    assert {a[3] for a in session.answers} == {ALWAYS_REASON}
    session.id = "s2"  # another session: asked again
    prompt.feed(SessionEvent("approval_requested", _request("a4")))
    assert [p.id for p in prompt.pending] == ["a2", "a4"]


async def test_a_lost_answer_is_asked_again_and_a_closed_one_is_dropped() -> None:
    prompt, session, out = _prompt()
    session.next = [rejected(REQUEST_FAILED, "connection refused"), rejected(APPROVAL_CLOSED, "expired")]
    prompt.sync([PendingApproval.from_json(_request("a1"))])
    _keys(prompt, "y")
    await prompt.settle()
    assert "✗ deploy: connection refused" in out.getvalue()
    assert [p.id for p in prompt.pending] == ["a1"]
    _keys(prompt, "y")
    await prompt.settle()
    assert "✗ deploy: expired" in out.getvalue() and not prompt.asking
    prompt.sync([])
    assert not prompt.asking


def test_resolution_lines_name_who_or_why() -> None:
    base = {"tool": "deploy", "args": {"env": "prod"}}
    assert resolution_line({**base, "decision": "denied", "by": "chat", "reason": "no"})[0] == (
        "  ✗ deploy env=prod denied by chat: no"
    )
    assert resolution_line({**base, "decision": "denied", "by": "expiry", "cause": "expired"})[0] == (
        "  ✗ deploy env=prod denied (expired)"
    )
    line = resolution_line({**base, "decision": "approved", "by": "chat", "reason": ALWAYS_REASON})[0]
    assert line == "  ✓ deploy env=prod approved by chat (always for this session)"
