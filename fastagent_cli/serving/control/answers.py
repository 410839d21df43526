"""``POST /control/sessions/{id}/approvals/{approval}``: the body of an answer and its statuses.

``{"decision": "approve" | "deny", "reason"?: string, "by"?: string}``: ``reason`` (a deny's) is
what the model reads, ``by`` who answered, for the audit (default ``control plane``). The answer
is a result as every action's: ``200 {"ok": true, "runId"}``, ``404`` ``no_such_approval`` (or the
session has none), ``409`` ``approval_closed`` (answered, expired or withdrawn), ``400``
``invalid_command`` for a malformed body; ``401`` comes from the plane's token check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastagent_cli.control import (
    APPROVAL_CLOSED,
    INVALID_COMMAND,
    NO_SUCH_APPROVAL,
    ActionResult,
    Decision,
    parse_decision,
    rejected,
)

__all__ = ["ANSWER_STATUS", "CONTROL_PLANE_ANSWERER", "parse_answer"]

ANSWER_STATUS: Mapping[str, int] = {NO_SUCH_APPROVAL: 404, APPROVAL_CLOSED: 409, INVALID_COMMAND: 400}
CONTROL_PLANE_ANSWERER = "control plane"
_USAGE = 'expected {"decision": "approve" | "deny", "reason"?: string, "by"?: string}'
_MAX_TEXT = 2000


def parse_answer(body: Any) -> tuple[Decision, str | None, str] | ActionResult:
    """``(decision, reason, by)``, or the ``invalid_command`` refusal."""
    if not isinstance(body, Mapping):
        return rejected(INVALID_COMMAND, _USAGE)
    decision = parse_decision(body.get("decision"))
    reason, by = body.get("reason"), body.get("by", CONTROL_PLANE_ANSWERER)
    if decision is None or not (reason is None or isinstance(reason, str)) or not isinstance(by, str):
        return rejected(INVALID_COMMAND, _USAGE)
    if len(reason or "") > _MAX_TEXT or len(by) > 200:
        return rejected(INVALID_COMMAND, f"reason is at most {_MAX_TEXT} characters, by at most 200")
    return decision, reason, by.strip() or CONTROL_PLANE_ANSWERER
