"""Tool approvals in the session vocabulary: the record's entries, the state's list, the codes.

A call that needs approval is recorded as a ``custom`` entry ``fastagent:approval`` (``data:
{id, toolCallId, tool, args, requestedAt, expiresAt, answerers}``) and its answer as a
``fastagent:approval_decision`` (``data: {id, decision, by, at, reason?, cause}``): the audit trail,
and what makes a pending request survive a restart. A request is pending while it has no decision
and its tool call no result, on the leaf's last assistant message (:func:`pending_on_branch`).
Events: ``approval_requested`` / ``approval_resolved`` carry the same fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "APPROVAL_CLOSED",
    "APPROVAL_DECISION_TYPE",
    "APPROVAL_TYPE",
    "NOT_AN_ANSWERER",
    "NO_SUCH_APPROVAL",
    "Decision",
    "PendingApproval",
    "decisions_on_branch",
    "parse_decision",
    "pending_on_branch",
]

APPROVAL_TYPE = "fastagent:approval"
APPROVAL_DECISION_TYPE = "fastagent:approval_decision"

NO_SUCH_APPROVAL = "no_such_approval"
"""An answer naming an approval this session has never asked (HTTP 404 on the control plane)."""
APPROVAL_CLOSED = "approval_closed"
"""An answer to an approval already answered, expired or withdrawn (HTTP 409)."""
NOT_AN_ANSWERER = "not_an_answerer"
"""An answer from someone who may not answer this approval (a channel's other members)."""

Decision = Literal["approve", "deny"]


def parse_decision(value: object) -> Decision | None:
    """``approve``/``deny`` (also ``approved``/``denied``), else ``None``."""
    if value in ("approve", "approved"):
        return "approve"
    if value in ("deny", "denied"):
        return "deny"
    return None


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """One request waiting for an answer (times: epoch ms; ``expires_at`` ``None``: no expiry)."""

    id: str
    tool_call_id: str
    tool: str
    args: Any
    requested_at: int
    expires_at: int | None = None
    answerers: tuple[str, ...] = ()
    within: str | None = None
    """The tool call that made this one (code mode's nested calls), if any."""

    def to_json(self) -> dict[str, Any]:
        """The state's ``approvals[]`` item (and the record entry's / the event's ``data``)."""
        return {
            "id": self.id,
            "toolCallId": self.tool_call_id,
            "tool": self.tool,
            "args": self.args,
            "requestedAt": self.requested_at,
            "expiresAt": self.expires_at,
            "answerers": list(self.answerers),
            **({"within": self.within} if self.within else {}),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> PendingApproval:
        ident, call, tool = obj.get("id"), obj.get("toolCallId", ""), obj.get("tool")
        requested, expires = obj.get("requestedAt", 0), obj.get("expiresAt")
        if not isinstance(ident, str) or not isinstance(tool, str) or not isinstance(call, str):
            raise ValueError("an approval needs a string id and tool")
        if not isinstance(requested, int) or (expires is not None and not isinstance(expires, int)):
            raise ValueError("an approval's requestedAt/expiresAt are epoch milliseconds")
        answerers = obj.get("answerers") or []
        return cls(ident, call, tool, obj.get("args"), requested, expires, tuple(str(a) for a in answerers))

    def expired(self, now_ms: int) -> bool:
        return self.expires_at is not None and now_ms >= self.expires_at


def _custom(entry: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    if entry.get("type") != "custom" or entry.get("customType") != kind:
        return None
    data = entry.get("data")
    return data if isinstance(data, Mapping) else None


def decisions_on_branch(ancestors: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The decisions (by approval id) recorded after the leaf's last assistant message."""
    out: dict[str, Mapping[str, Any]] = {}
    for entry in _since_assistant(ancestors):
        data = _custom(entry, APPROVAL_DECISION_TYPE)
        if data is not None and isinstance(data.get("id"), str):
            out.setdefault(data["id"], data)
    return out


def pending_on_branch(ancestors: Iterable[Mapping[str, Any]]) -> list[PendingApproval]:
    """The requests still waiting, oldest first, from the entries of a branch walked from its
    leaf back (``record.ancestors()``)."""
    decided: set[str] = set()
    answered: set[str] = set()
    found: list[PendingApproval] = []
    for entry in _since_assistant(ancestors):
        if entry.get("type") == "message":
            answered.add(str(entry.get("message", {}).get("toolCallId", "")))
            continue
        decision = _custom(entry, APPROVAL_DECISION_TYPE)
        if decision is not None:
            decided.add(str(decision.get("id")))
            continue
        data = _custom(entry, APPROVAL_TYPE)
        if data is None:
            continue
        try:
            request = PendingApproval.from_json(data)
        except ValueError:
            continue
        closed = request.tool_call_id in answered or (
            request.within is not None and request.within in answered
        )
        if request.id not in decided and not closed:
            found.append(request)
    found.reverse()
    return found


def _since_assistant(ancestors: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    """The entries after the leaf's last assistant message (walking back, that one excluded)."""
    for entry in ancestors:
        if entry.get("type") == "message":
            role = entry.get("message", {}).get("role")
            if role != "toolResult":
                return
        yield entry
