"""What the server counts against the estimate, recomputed from a session record.

A compaction leaves no answer whose reported usage measures the new context (the answers it kept
reported a context that is gone), so until the next answer the context would be measured by the
bare estimate alone, which overrates JSON tool schemas and Markdown prompts (by about 1.3x against
a real llama.cpp server). The record still holds what the compaction summarised, so the last
report can be set against the estimate of the context it was given, in any process: that ratio
(:func:`~fastagent_cli.models.context_budget.learn_server_ratio`) stands in for a report.
"""

from __future__ import annotations

from fastagent_cli.models.context_budget import has_report, learn_server_ratio, usage_tokens
from fastagent_cli.models.token_counts import conversation_counts
from fastagent_cli.models.types import ModelRequest
from fastagent_cli.sessions.record import SessionRecord

__all__ = ["recorded_server_ratio"]


def recorded_server_ratio(record: SessionRecord, request: ModelRequest) -> float | None:
    """What the server counted against the estimate at the last answer on the record's active path
    that reported usage, measured on the context that answer was given (rebuilt from the record,
    which keeps what a compaction summarised): where the context has no report of its own (after a
    compaction, also in a new process) it stands in for one. ``None`` where the context's own
    report stands, or nothing was reported yet."""
    if has_report(request.messages):
        return None
    for entry in reversed(record.path()):
        message = entry.get("message") if entry["type"] == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        usage = message.get("usage")
        if message.get("stopReason") in ("error", "aborted") or not isinstance(usage, dict):
            continue
        if not usage_tokens(usage):
            continue
        parent = entry.get("parentId")
        before = record.context(parent).messages if isinstance(parent, str) else []
        counts = conversation_counts(request.memo)
        ratio = learn_server_ratio(request.system, before, request.tools, message, counts)
        if ratio is not None:
            return ratio
    return None
