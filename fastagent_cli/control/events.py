"""Live session events: what a session's watchers see while runs and writes happen.

Each event is ``{type, timestamp, runId?, data}`` (``timestamp`` in Unix milliseconds; ``runId`` on
run-scoped events). Events are live, not durable: a subscription sees only what happens while it
is open, so start watching *before* driving a run, and recover what a disconnect missed from
``entries(since=...)``. The vocabulary is additive: consumers ignore (or forward) types they do
not know.

======================  ========  =========================================================
type                    runId     data
======================  ========  =========================================================
run_started             yes       ``{}``
user_message            yes       ``{entryId, text}``: the opening prompt, a steer or a
                                  follow-up entered the conversation (already in entries())
notice                  yes       ``{entryId, source, text}``: a notice entered the conversation
message_started         yes       ``{}``: an assistant message begins
message_delta           yes       ``{channel: "text"|"thinking", delta}``
message_finished        yes       ``{entryId, stopReason}``
tool_started            yes       ``{id, name, args}``
tool_progress           yes       ``{id, name, partialResult}`` (a snapshot: replace, never append)
tool_finished           yes       ``{id, isError, content: {content: [block], details?}}`` (the
                                  tool's result, as the original publishes it)
queue_changed           yes       ``{steering, followUp, steeringTexts, followUpTexts}``: the
                                  counts (the original's shape) and the texts, oldest first
model_retry_scheduled   yes       ``{attempt, maxAttempts, delayMs, error}``: a model call
                                  failed transiently and is retried after ``delayMs``
retry_scheduled         yes/no    ``{operation: "compaction"|"branch_summary", attempt,
                                  maxAttempts, delayMs, error}`` (a summary's model call)
compaction_started      yes/no    ``{reason: "manual"|"threshold"|"overflow", tokens?}`` (the
                                  context's estimated size when it started)
compaction_finished     yes/no    ``{summary, tokensBefore?, tokensAfter?}`` | ``{error}`` |
                                  ``{aborted: true}``
state_changed           no        the fields a write changed: ``name``, ``model`` (with the
                                  ``thinkingLevel`` it resolves to), ``thinkingLevel``,
                                  ``leafEntryId`` (only for a navigation, with model and level)
run_settled             yes       ``{status: "completed"|"failed"|"aborted", error?: {code?,
                                  message, retryable}}``
serving_error           no        ``{message}`` (the server failed outside a run's outcome)
======================  ========  =========================================================

Automatic compaction happens inside a run (``runId`` set, the session reads ``running``);
manual compaction has no ``runId`` and the session reads ``compacting``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EVENT_TYPES",
    "SUBSCRIBER_BUFFER_CAP",
    "SessionEvent",
    "SessionEventsClosed",
]

SUBSCRIBER_BUFFER_CAP = 10_000
"""A subscriber this many events behind is closed (it resyncs through ``entries()``)."""

EVENT_TYPES = (
    "run_started",
    "run_settled",
    "user_message",
    "notice",
    "message_started",
    "message_delta",
    "message_finished",
    "tool_started",
    "tool_progress",
    "tool_finished",
    "approval_requested",
    "approval_resolved",
    "queue_changed",
    "state_changed",
    "compaction_started",
    "compaction_finished",
    "retry_scheduled",
    "model_retry_scheduled",
    "serving_error",
)


@dataclass(frozen=True, slots=True)
class SessionEvent:
    type: str
    data: Mapping[str, Any]
    run_id: str | None = None
    timestamp: int = field(default_factory=lambda: time.time_ns() // 1_000_000)
    _wire: list[str] = field(default_factory=list, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "timestamp": self.timestamp}
        if self.run_id is not None:
            out["runId"] = self.run_id
        out["data"] = dict(self.data)
        return out

    def wire(self) -> str:
        """The compact JSON of :meth:`to_json`, encoded once however many watchers send it."""
        if not self._wire:
            self._wire.append(json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":")))
        return self._wire[0]

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SessionEvent:
        kind, stamp, data, run_id = obj.get("type"), obj.get("timestamp"), obj.get("data"), obj.get("runId")
        if not isinstance(kind, str):
            raise ValueError("an event needs a string type")
        if isinstance(stamp, bool) or not isinstance(stamp, int | float):
            raise ValueError("an event needs a numeric timestamp")
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ValueError("an event's data must be an object")
        if run_id is not None and not isinstance(run_id, str):
            raise ValueError("runId must be a string")
        return cls(kind, dict(data), run_id, int(stamp))


class SessionEventsClosed(Exception):
    """A session's event stream ended for a reason other than the consumer's own detach:
    ``reason`` is ``"deleted"`` (the session was deleted), ``"overflow"`` (the consumer fell
    :data:`SUBSCRIBER_BUFFER_CAP` events behind) or ``"closed"`` (the hub shut down). Recover with
    ``state()`` and ``entries(since=...)``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
