"""The approval desk: tool calls that wait for a person, and the answers that release them.

A call whose tool needs approval (:class:`~fastagent_cli.tools.approval.ApprovalPolicy`) does not
run: :meth:`ApprovalDesk.gate` records a ``fastagent:approval`` entry, publishes
``approval_requested`` (the invoke stream carries it as the contract's ``approval_requested``) and
waits on a future, so the loop and the batch's other calls go on. :meth:`ApprovalDesk.answer`
(any host: the control plane, a channel, chat) resolves it; a ``fastagent:approval_decision``
entry, ``approval_resolved`` and a server log line record who, when, what and why. A deny's reason
is the tool result the model reads. The expiry denies; an abort ends the wait and records
``cause: "aborted"``. A run cancelled otherwise (its caller left, the server stops or reloads)
leaves the request pending in the record, to be answered later.

After a restart nothing waits in memory, but the record still holds the request (the store's
repair leaves its call open): an answer then starts a run that re-enters the turn from the record
(:mod:`.resume`): the answered call runs (or is denied), calls still pending wait
again, and the model continues. A new prompt on such a session withdraws them first
(:meth:`ApprovalDesk.withdraw`, ``cause: "superseded"``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from fastagent_cli.control import (
    APPROVAL_CLOSED,
    APPROVAL_DECISION_TYPE,
    APPROVAL_TYPE,
    NO_SUCH_APPROVAL,
    ActionResult,
    Decision,
    PendingApproval,
    SessionEvent,
    accepted,
    pending_on_branch,
    rejected,
)
from fastagent_cli.control.approvals import decisions_on_branch
from fastagent_cli.engine.runs import Run
from fastagent_cli.messages import ToolCall, ToolResultMessage, now_ms
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.tools.approval import ApprovalPolicy
from fastagent_cli.tools.base import Tool, ToolResult, text_result

__all__ = ["ApprovalDesk", "Answer", "AutoAnswer", "denied_text"]

log = logging.getLogger("fastagent.agent")

AutoAnswer = Callable[[str], Decision]
"""Answers every request at once from the tool's name (``invoke --approve``)."""
Emit = Callable[[SessionEvent], None]
Read = Callable[[str], Awaitable[SessionRecord | None]]
Resume = Callable[[str], Awaitable[ActionResult]]

EXPIRED_REASON = "the approval request expired"
SUPERSEDED_REASON = "a new message arrived before anyone answered"
POLICY_REASON = 'refused by the agent\'s policy ([approval] mode = "deny")'


@dataclass(frozen=True, slots=True)
class Answer:
    decision: Decision
    by: str
    reason: str | None = None
    cause: str = "answer"


def denied_text(reason: str | None) -> str:
    """The tool result the model reads for a denied call."""
    return f"Denied: {reason}" if reason else "Denied by the user"


@dataclass(slots=True)
class _Waiter:
    request: PendingApproval
    run: Run
    future: asyncio.Future[Answer]


class ApprovalDesk:
    """The approvals of one engine: the policy, the requests waiting in memory, the answers."""

    def __init__(self, policy: ApprovalPolicy | None = None) -> None:
        self.policy = policy if policy is not None else ApprovalPolicy()
        self.auto: AutoAnswer | None = None
        """Set: every request is answered at once by it (``by: auto_by``), nobody is asked."""
        self.auto_by = "invoke --approve"
        self.read: Read | None = None
        self.resume: Resume | None = None
        self._waiting: dict[tuple[str, str], _Waiter] = {}
        self._early: dict[tuple[str, str], Answer] = {}
        """Answers for requests of a restarted server, waiting for their resumed run."""

    def gated(self, tool: Tool) -> bool:
        """Cheap: whether a call of ``tool`` must be looked at (most turns stop here)."""
        return tool.approval is not None or self.policy.gates

    # --- the run's side -------------------------------------------------------------------------

    async def gate(
        self,
        call: ToolCall,
        tool: Tool,
        record: SessionRecord,
        run: Run,
        emit: Emit,
        within: str | None = None,
    ) -> ToolResult | None:
        """``None``: run the call; else the denial to record as its result. ``within``: the tool
        call that makes this one (code mode's nested calls: not resumable, the outer call is)."""
        verdict = self.policy.verdict(tool.name, tool.approval, call["arguments"])
        if verdict == "run":
            return None
        branch = list(record.ancestors())
        earlier = next((p for p in pending_on_branch(branch) if p.tool_call_id == call["id"]), None)
        if earlier is None:
            for decision in decisions_on_branch(branch).values():
                if decision.get("toolCallId") == call["id"]:  # answered before a restart
                    return _outcome(Answer(decision.get("decision", "deny"), "", decision.get("reason")))
        request = earlier or self._request(call, record.session, within)
        if earlier is None and (verdict == "deny" or self.auto is not None):
            # nobody is asked: the decision alone is the audit entry
            if verdict == "deny":
                answer = Answer("deny", "policy", POLICY_REASON, "policy")
            else:
                assert self.auto is not None
                answer = Answer(self.auto(tool.name), self.auto_by, None, "auto")
                if answer.decision == "deny":
                    answer = replace(answer, reason=f"{tool.name} was not approved ({self.auto_by})")
            self._decide(request, answer, record, run, emit)
            return _outcome(answer)
        if earlier is None:
            record.append("custom", customType=APPROVAL_TYPE, data=request.to_json())
        key = (record.session, request.id)
        early = self._early.pop(key, None)
        if early is None:
            emit(run.event("approval_requested", **request.to_json()))
            answer = await self._wait(request, record, run, emit)
        else:  # answered after a restart: asked already, nobody is to be asked again
            answer = early
        self._decide(request, answer, record, run, emit)
        return _outcome(answer)

    def _request(self, call: ToolCall, session: str, within: str | None) -> PendingApproval:
        now = now_ms()
        timeout = self.policy.timeout
        return PendingApproval(
            id=f"ap_{uuid.uuid4().hex[:16]}",
            tool_call_id=call["id"],
            tool=call["name"],
            args=call["arguments"],
            requested_at=now,
            expires_at=now + int(timeout * 1000) if timeout else None,
            answerers=self.policy.answerers,
            within=within,
        )

    async def _wait(self, request: PendingApproval, record: SessionRecord, run: Run, emit: Emit) -> Answer:
        session = record.session
        key = (session, request.id)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[key] = _Waiter(request, run, future)
        log.info(
            "[approval] session=%s %s waits for an answer (approval %s)", session, request.tool, request.id
        )
        left = None if request.expires_at is None else max(0.0, (request.expires_at - now_ms()) / 1000)
        try:
            return await asyncio.wait_for(asyncio.shield(future), left)
        except TimeoutError:
            return Answer("deny", "expiry", EXPIRED_REASON, "expired")
        except asyncio.CancelledError:
            if run.abort_requested:  # else the caller left or the server stops: it stays pending
                aborted = Answer("deny", "abort", "the run was aborted", "aborted")
                self._decide(request, aborted, record, run, emit)
            raise
        finally:
            self._waiting.pop(key, None)

    def _decide(
        self, request: PendingApproval, answer: Answer, record: SessionRecord, run: Run, emit: Emit
    ) -> None:
        data: dict[str, Any] = {
            "id": request.id,
            "toolCallId": request.tool_call_id,
            "tool": request.tool,
            "args": request.args,
            "decision": "approved" if answer.decision == "approve" else "denied",
            "by": answer.by,
            "at": now_ms(),
            "cause": answer.cause,
        }
        if answer.reason:
            data["reason"] = answer.reason
        try:
            record.append("custom", customType=APPROVAL_DECISION_TYPE, data=data)
        except Exception:  # an aborted run closing its wait: the call's aborted result still lands
            if answer.cause != "aborted":
                raise
            log.warning("[approval] could not record the aborted approval %s", request.id)
        emit(run.event("approval_resolved", **data))
        log.info(
            "[approval] session=%s %s %s by %s (%s%s)",
            record.session,
            request.tool,
            data["decision"],
            answer.by,
            answer.cause,
            f": {answer.reason}" if answer.reason else "",
        )

    def withdraw(self, record: SessionRecord, run: Run, emit: Emit) -> list[ToolResultMessage]:
        """Close the requests a restarted server left open, before a new prompt joins the
        session: each denied (``superseded``), its call given that result; the results written."""
        pending = pending_on_branch(record.ancestors())
        results: list[ToolResultMessage] = []
        for request in pending:
            self._decide(
                request, Answer("deny", "system", SUPERSEDED_REASON, "superseded"), record, run, emit
            )
            message: ToolResultMessage = {
                "role": "toolResult",
                "toolCallId": request.tool_call_id,
                "toolName": request.tool,
                "content": [{"type": "text", "text": denied_text(SUPERSEDED_REASON)}],
                "isError": True,
                "timestamp": now_ms(),
            }
            record.append_message(message)
            results.append(message)
        return results

    # --- the answering side ---------------------------------------------------------------------

    async def answer(
        self, session: str, approval_id: str, decision: Decision, *, by: str, reason: str | None = None
    ) -> ActionResult:
        """Approve or deny ``approval_id`` of ``session`` on behalf of ``by``; ``reason`` (a deny)
        is what the model reads. ``no_such_approval`` / ``approval_closed`` otherwise."""
        reason = (reason or "").strip() or None
        answer = Answer(decision, by or "unknown", reason if decision == "deny" else reason)
        waiter = self._waiting.get((session, approval_id))
        if waiter is not None:
            if waiter.future.done():
                return rejected(APPROVAL_CLOSED, f"approval {approval_id} was already answered")
            waiter.future.set_result(answer)
            return accepted(waiter.run.run_id)
        record = await self.read(session) if self.read is not None else None
        if record is None:
            return rejected(NO_SUCH_APPROVAL, f"session {session} has no approval {approval_id}")
        pending = next((p for p in pending_on_branch(record.ancestors()) if p.id == approval_id), None)
        if pending is None:
            if any(_names(entry, approval_id) for entry in record.entries):
                return rejected(APPROVAL_CLOSED, f"approval {approval_id} is no longer pending")
            return rejected(NO_SUCH_APPROVAL, f"session {session} has no approval {approval_id}")
        if pending.expired(now_ms()):
            return rejected(APPROVAL_CLOSED, f"approval {approval_id} expired")
        key = (session, approval_id)
        if key in self._early:
            return rejected(APPROVAL_CLOSED, f"approval {approval_id} was already answered")
        if self.resume is None:
            return rejected(APPROVAL_CLOSED, f"approval {approval_id} cannot be resumed here")
        self._early[key] = answer
        started = await self.resume(session)
        if not started.ok:
            self._early.pop(key, None)
        return started

    def waiting(self, session: str) -> list[PendingApproval]:
        """The requests of ``session`` waiting in this process."""
        return [w.request for (s, _), w in self._waiting.items() if s == session]


def _names(entry: Mapping[str, Any], approval_id: str) -> bool:
    data = entry.get("data")
    return (
        entry.get("type") == "custom"
        and entry.get("customType") == APPROVAL_TYPE
        and isinstance(data, Mapping)
        and data.get("id") == approval_id
    )


def _outcome(answer: Answer) -> ToolResult | None:
    if answer.decision == "approve":
        return None
    return text_result(denied_text(answer.reason), is_error=True, details={"approval": "denied"})
