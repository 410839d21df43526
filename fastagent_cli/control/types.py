"""The values the session hub reads and writes, with their JSON wire forms (camelCase keys).

Every type here has ``to_json()`` and ``from_json()``: the local hub returns these objects, the
HTTP plane sends ``to_json()``, and a remote client rebuilds them with ``from_json()``, so both
sides hand callers the same values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from fastagent_cli.control.approvals import PendingApproval

__all__ = [
    "UPDATE_FIELDS",
    "pending_labels",
    "AgentCommand",
    "Capabilities",
    "EntryView",
    "PendingPrompts",
    "SessionEntries",
    "SessionListing",
    "SessionState",
    "SessionUpdate",
    "SessionUsage",
    "Status",
]

Status: TypeAlias = Literal["idle", "running", "compacting"]
UPDATE_FIELDS = ("name", "model", "thinkingLevel", "leafEntryId")
"""Every field ``update()`` knows, by its wire name."""


def _get(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    value = obj.get(key, default)
    if value is ...:
        raise ValueError(f"missing {key!r}")
    if value is not None and value is not default and not isinstance(value, kind):
        raise ValueError(f"{key!r} has the wrong type")
    if kind is int and isinstance(value, bool):
        raise ValueError(f"{key!r} has the wrong type")
    return value


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key!r} must be a list of strings")
    return tuple(value)


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What this deployment offers (static: nothing here depends on a session).

    ``model_selection`` is ``None`` when models cannot be chosen (``modelSelection: false`` on
    the wire), else the specs ``update(model=...)`` accepts. A hub without write wiring reports
    an empty ``updatable``, ``fork`` and ``delete`` false, and refuses those calls with
    ``unsupported_capability``.
    """

    steering: bool = True
    follow_up: bool = True
    manual_compaction: bool = False
    model_selection: tuple[str, ...] | None = None
    thinking_level: bool = False
    navigate: bool = False
    tool_progress: bool = True
    usage: bool = True
    updatable: tuple[str, ...] = ()
    fork: bool = False
    delete: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "steering": self.steering,
            "followUp": self.follow_up,
            "manualCompaction": self.manual_compaction,
            "modelSelection": (
                False if self.model_selection is None else {"allowedModels": list(self.model_selection)}
            ),
            "thinkingLevel": self.thinking_level,
            "navigate": self.navigate,
            "toolProgress": self.tool_progress,
            "usage": self.usage,
            "updatable": list(self.updatable),
            "fork": self.fork,
            "delete": self.delete,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Capabilities:
        selection = obj.get("modelSelection", False)
        models: tuple[str, ...] | None = None
        if isinstance(selection, Mapping):
            models = _strings(selection.get("allowedModels", []), "allowedModels")
        elif selection is not False:
            raise ValueError("'modelSelection' must be false or {allowedModels}")
        flags = {
            key: bool(_get(obj, wire, bool, False))
            for key, wire in (
                ("steering", "steering"),
                ("follow_up", "followUp"),
                ("manual_compaction", "manualCompaction"),
                ("thinking_level", "thinkingLevel"),
                ("navigate", "navigate"),
                ("tool_progress", "toolProgress"),
                ("usage", "usage"),
                ("fork", "fork"),
                ("delete", "delete"),
            )
        }
        return cls(model_selection=models, updatable=_strings(obj.get("updatable", []), "updatable"), **flags)


@dataclass(frozen=True, slots=True)
class AgentCommand:
    """A name a ``/`` composer may offer (a skill today): a listing, not a dispatch surface."""

    name: str
    description: str | None = None
    source: str = "skill"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        _put(out, "description", self.description)
        out["source"] = self.source
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> AgentCommand:
        return cls(_get(obj, "name", str), _get(obj, "description", str, None), _get(obj, "source", str))


@dataclass(frozen=True, slots=True)
class SessionListing:
    """One row of the deployment's conversation list (times in Unix milliseconds)."""

    session: str
    created_at: int
    updated_at: int
    message_count: int
    name: str | None = None
    preview: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"session": self.session}
        _put(out, "name", self.name)
        out.update(createdAt=self.created_at, updatedAt=self.updated_at, messageCount=self.message_count)
        _put(out, "preview", self.preview)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SessionListing:
        return cls(
            _get(obj, "session", str),
            int(_get(obj, "createdAt", (int, float))),
            int(_get(obj, "updatedAt", (int, float))),
            _get(obj, "messageCount", int),
            _get(obj, "name", str, None),
            _get(obj, "preview", str, None),
        )


@dataclass(frozen=True, slots=True)
class PendingPrompts:
    """The active run's queues: how many prompts wait in each, and their texts oldest first.

    On the wire the counts are the original's ``{steering: number, followUp: number}``; the
    texts ride beside them as ``steeringTexts`` / ``followUpTexts``. A server that sends counts
    only (the original) leaves the texts empty: :meth:`labels` then stands in for them.
    """

    steering: tuple[str, ...] = ()
    follow_up: tuple[str, ...] = ()
    steering_count: int = -1
    """``len(steering)`` unless a server sent a count without the texts."""
    follow_up_count: int = -1

    def __post_init__(self) -> None:
        if self.steering_count < 0:
            object.__setattr__(self, "steering_count", len(self.steering))
        if self.follow_up_count < 0:
            object.__setattr__(self, "follow_up_count", len(self.follow_up))

    def labels(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The texts to show for each queue, ``"(queued prompt)"`` for one whose text the server
        did not send."""
        return _labelled(self.steering, self.steering_count), _labelled(self.follow_up, self.follow_up_count)

    def to_json(self) -> dict[str, Any]:
        return {
            "steering": self.steering_count,
            "followUp": self.follow_up_count,
            "steeringTexts": list(self.steering),
            "followUpTexts": list(self.follow_up),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> PendingPrompts:
        """Counts with optional texts (this server, the original), or the texts alone as lists
        (this server before it sent counts)."""
        queues: list[tuple[tuple[str, ...], int]] = []
        for key in ("steering", "followUp"):
            value = obj.get(key, 0)
            if isinstance(value, list):
                texts = _strings(value, key)
                queues.append((texts, len(texts)))
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{key!r} must be a count")
            raw = obj.get(f"{key}Texts")
            texts = () if raw is None else _strings(raw, f"{key}Texts")
            queues.append((texts, max(value, len(texts))))
        (steering, steering_count), (follow_up, follow_up_count) = queues
        return cls(steering, follow_up, steering_count, follow_up_count)


def pending_labels(data: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The queue texts to show for a ``queue_changed`` event's data (nothing if malformed)."""
    try:
        return PendingPrompts.from_json(data).labels()
    except ValueError:
        return (), ()


def _labelled(texts: tuple[str, ...], count: int) -> tuple[str, ...]:
    return texts + ("(queued prompt)",) * max(0, count - len(texts))


@dataclass(frozen=True, slots=True)
class SessionUsage:
    """The newest answer's own numbers on the active path (not a running total).

    ``context_tokens`` is how full the context is now; ``None`` when unknown (after a compaction,
    until the next answer). ``context_window`` is the running model's.
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    context_tokens: int | None = None
    context_window: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "cost": self.cost,
        }
        _put(out, "contextTokens", self.context_tokens)
        _put(out, "contextWindow", self.context_window)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SessionUsage:
        context = _get(obj, "contextTokens", int, None)
        window = _get(obj, "contextWindow", int, None)
        return cls(
            _get(obj, "inputTokens", int),
            _get(obj, "outputTokens", int),
            _get(obj, "cacheReadTokens", int, 0),
            _get(obj, "cacheWriteTokens", int, 0),
            float(_get(obj, "cost", (int, float), 0.0)),
            context,
            window,
        )


@dataclass(frozen=True, slots=True)
class SessionTotals:
    """What every model answer of the session used and cost, summed (from the usage ledger)."""

    requests: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "totalTokens": self.total_tokens,
            "cost": self.cost,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SessionTotals:
        return cls(
            _get(obj, "requests", int, 0),
            _get(obj, "inputTokens", int, 0),
            _get(obj, "outputTokens", int, 0),
            _get(obj, "cacheReadTokens", int, 0),
            _get(obj, "cacheWriteTokens", int, 0),
            float(_get(obj, "cost", (int, float), 0.0)),
        )


@dataclass(frozen=True, slots=True)
class SessionState:
    """What a session will run with and what it is doing now (there is no ``failed`` status:
    a failure is a run's outcome, not a session's state)."""

    status: Status = "idle"
    name: str | None = None
    active_run_id: str | None = None
    model: str | None = None
    thinking_level: str | None = None
    available_thinking_levels: tuple[str, ...] | None = None
    pending: PendingPrompts = field(default_factory=PendingPrompts)
    usage: SessionUsage | None = None
    leaf_entry_id: str | None = None
    approvals: tuple[PendingApproval, ...] = ()
    """Tool calls waiting for an answer (``approvals: [{id, tool, args, requestedAt, expiresAt}]``)."""
    totals: SessionTotals | None = None
    """The session's usage and cost so far, every answer summed (``None``: none recorded)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        _put(out, "name", self.name)
        _put(out, "activeRunId", self.active_run_id)
        _put(out, "model", self.model)
        _put(out, "thinkingLevel", self.thinking_level)
        if self.available_thinking_levels is not None:
            out["availableThinkingLevels"] = list(self.available_thinking_levels)
        out["pending"] = self.pending.to_json()
        if self.usage is not None:
            out["usage"] = self.usage.to_json()
        _put(out, "leafEntryId", self.leaf_entry_id)
        if self.approvals:  # absent when none wait (additive: older readers see what they saw)
            out["approvals"] = [a.to_json() for a in self.approvals]
        if self.totals is not None:
            out["totals"] = self.totals.to_json()
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SessionState:
        status = obj.get("status")
        if status not in ("idle", "running", "compacting"):
            raise ValueError(f"unknown status {status!r}")
        levels = obj.get("availableThinkingLevels")
        usage = obj.get("usage")
        totals = obj.get("totals")
        return cls(
            status,
            _get(obj, "name", str, None),
            _get(obj, "activeRunId", str, None),
            _get(obj, "model", str, None),
            _get(obj, "thinkingLevel", str, None),
            None if levels is None else _strings(levels, "availableThinkingLevels"),
            PendingPrompts.from_json(obj.get("pending") or {}),
            SessionUsage.from_json(usage) if isinstance(usage, Mapping) else None,
            _get(obj, "leafEntryId", str, None),
            tuple(PendingApproval.from_json(a) for a in obj.get("approvals") or () if isinstance(a, Mapping)),
            SessionTotals.from_json(totals) if isinstance(totals, Mapping) else None,
        )


@dataclass(frozen=True, slots=True)
class EntryView:
    """One durable record entry, normalised: ``kind`` is ``user`` ``{text, images?, documents?}``,
    ``assistant`` ``{text, thinking?, toolCalls?: [{id, name, args}]}``, ``tool``
    ``{toolCallId, toolName, isError, text}``, ``message:<role>`` for other roles, and any other
    entry type by name with empty ``data`` (skippable)."""

    id: str
    timestamp: int
    kind: str
    data: Mapping[str, Any]
    parent_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        _put(out, "parentId", self.parent_id)
        out.update(timestamp=self.timestamp, kind=self.kind, data=dict(self.data))
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> EntryView:
        data = obj.get("data") or {}
        if not isinstance(data, Mapping):
            raise ValueError("'data' must be an object")
        return cls(
            _get(obj, "id", str),
            int(_get(obj, "timestamp", (int, float))),
            _get(obj, "kind", str),
            dict(data),
            _get(obj, "parentId", str, None),
        )


@dataclass(frozen=True, slots=True)
class SessionEntries:
    """``entries(since=...)``: the entries appended after ``since`` (all of them for an unknown
    cursor), in append order, and the session's current leaf."""

    entries: Sequence[EntryView] = ()
    leaf_entry_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"entries": [e.to_json() for e in self.entries]}
        _put(out, "leafEntryId", self.leaf_entry_id)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SessionEntries:
        raw = obj.get("entries")
        if not isinstance(raw, list):
            raise ValueError("'entries' must be a list")
        return cls(tuple(EntryView.from_json(e) for e in raw), _get(obj, "leafEntryId", str, None))


@dataclass(frozen=True, slots=True)
class SessionUpdate:
    """One patch of session properties (``None``: leave as is). Validated as a whole before any
    write; one ``state_changed`` reports the result."""

    name: str | None = None
    model: str | None = None
    thinking_level: str | None = None
    leaf_entry_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "name", self.name)
        _put(out, "model", self.model)
        _put(out, "thinkingLevel", self.thinking_level)
        _put(out, "leafEntryId", self.leaf_entry_id)
        return out

    def fields(self) -> list[str]:
        """The wire names of the fields this patch sets."""
        return list(self.to_json())
