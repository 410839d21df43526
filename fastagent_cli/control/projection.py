"""The invoke stream as a projection of the session events.

A run publishes rich :class:`~fastagent_cli.control.SessionEvent` values; its caller's
``AgentEvent`` stream is their projection: ``message_delta`` becomes ``text`` / ``thinking``,
``tool_started`` / ``tool_finished`` become ``tool_started`` / ``tool_ended``, and
``retry_scheduled`` / ``model_retry_scheduled`` become the advisory ``retrying``, and
``approval_requested`` the advisory ``approval_requested``. Everything
else (queues, compaction, state) is for watchers only, so a caller that never acts on a run sees
what it always saw. The terminal comes from the run's settlement, not from an event
(:func:`settled_terminal` reads it from ``run_settled``, for a watcher following a run it did not
start: a channel turn whose approval is answered after a restart).
"""

from __future__ import annotations

from collections.abc import Mapping

from fastagent_cli.contract import (
    AgentEvent,
    ApprovalRequested,
    Completed,
    Failed,
    Retrying,
    Text,
    Thinking,
    ToolEnded,
    ToolStarted,
)
from fastagent_cli.control.events import SessionEvent

__all__ = ["project", "settled_terminal"]


def project(event: SessionEvent) -> AgentEvent | None:
    data = event.data
    kind = event.type
    if kind == "message_delta":
        return Text(data["delta"]) if data.get("channel") == "text" else Thinking(data["delta"])
    if kind == "tool_started":
        return ToolStarted(data["id"], data["name"], data["args"])
    if kind == "tool_finished":
        result = data["content"]  # {content: [blocks], details?}: the invoke stream gets the blocks
        blocks = result.get("content") if isinstance(result, Mapping) else result
        return ToolEnded(data["id"], data["isError"], blocks)
    if kind == "approval_requested":
        return ApprovalRequested(
            data["id"],
            data["toolCallId"],
            data["tool"],
            data["args"],
            data["expiresAt"],
            tuple(str(a) for a in data.get("answerers") or ()),
        )
    if kind in ("retry_scheduled", "model_retry_scheduled"):
        reason = str(data["error"])
        if kind == "retry_scheduled":
            reason = f"{data.get('operation')}: {reason}"
        return Retrying(data["attempt"], data["maxAttempts"], data["delayMs"], reason)
    return None


def settled_terminal(data: Mapping[str, object]) -> Completed | Failed:
    """The terminal a ``run_settled`` event's ``data`` stands for."""
    if data.get("status") == "completed":
        return Completed(None)
    error = data.get("error")
    fields: Mapping[str, object] = error if isinstance(error, Mapping) else {}
    code = fields.get("code")
    return Failed(
        str(fields.get("message") or f"the run ended {data.get('status')}"),
        bool(fields.get("retryable")),
        code if isinstance(code, str) else None,
    )
