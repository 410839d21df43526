"""One session record in pi's v3 JSONL form: a header line, then a tree of entries.

Entries carry ``type``, ``id`` (8 hex chars), ``parentId`` and an ISO ``timestamp``; appending
hangs the new entry under the current leaf and moves the leaf. The leaf of a reopened record is
its last entry in file order. An entry whose parent is missing from the file (its line was
corrupt and skipped) hangs under the entry before it in file order, so the history before the
gap stays on the path. The record writes every new entry through its ``sink`` (a file
append for the durable store, nothing for the in-memory one) before it is visible in memory. A
store whose writes complete later (the database's, which group-commits them) also gives a
``flush``: :meth:`SessionRecord.flush` waits until every entry appended so far is durable and
raises what could not be written.

Two fastagent entries keep pi's file format readable by pi:

* a leaf move (:meth:`SessionRecord.move_leaf`) is made durable at once by a ``custom`` entry of
  type ``fastagent:leaf`` hung under the new leaf: it is the last entry, so pi (and this reader)
  reopen on that branch; it enters no context, is not a position (the leaf it records is its
  parent), and the next entry hangs under its parent;
* the session's display name is pi's ``session_info`` entry (the latest non-empty one wins).

A ``leaf`` entry, which pi's harness (the TypeScript original's ``navigate``) writes for a leaf
move, moves the leaf to the entry it names when the record is read; it is no position either.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from fastagent_cli.control.approvals import pending_on_branch
from fastagent_cli.messages import (
    COMPACTION_SUMMARY_PREFIX,
    Message,
    ThinkingLevel,
    ToolResultMessage,
    now_ms,
)
from fastagent_cli.sessions.image_cap import cap_entry_images
from fastagent_cli.sessions.layout import spec_id

__all__ = [
    "COMPACTION_SUMMARY_PREFIX",
    "INTERRUPTED_TOOL_TEXT",
    "LEAF_MARKER_TYPE",
    "SESSION_VERSION",
    "TOOL_ACTIVATION_TYPE",
    "SessionContext",
    "SessionRecord",
    "entry_message",
    "is_leaf_marker",
    "is_position",
    "iso_now",
    "new_header",
]

SESSION_VERSION = 3
TOOL_ACTIVATION_TYPE = "fastagent:tool-activation"
LEAF_MARKER_TYPE = "fastagent:leaf"
INTERRUPTED_TOOL_TEXT = (
    "This tool call did not complete and its result is unavailable. Re-run it if the result is still needed."
)

_ADVANCE_LIMIT = 256
"""Entries a remembered context is moved down by at most; beyond that it is rebuilt."""

Entry = dict[str, Any]
Sink = Callable[[Sequence[Entry]], None]
Flush = Callable[[], Awaitable[None]]


_second: tuple[int, str] = (-1, "")
"""The last second :func:`iso_now` formatted, and its text (every entry of a turn is stamped)."""


def iso_now() -> str:
    """Now as ``2026-03-15T10:00:00.123Z`` (UTC, milliseconds truncated, as
    ``datetime.isoformat(timespec="milliseconds")`` writes it); the date and time of day are
    formatted once a second."""
    global _second
    second, millis = divmod(time.time_ns() // 1_000_000, 1000)
    kept = _second
    if kept[0] != second:
        kept = _second = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{kept[1]}.{millis:03d}Z"


def new_header(session: str, cwd: str, parent_session: str | None = None) -> Entry:
    """pi's header, as the original writes it: ``id`` is the caller's id in the spec's spelling."""
    header: Entry = {
        "type": "session",
        "version": SESSION_VERSION,
        "id": spec_id(session),
        "timestamp": iso_now(),
        "cwd": cwd,
    }
    if parent_session is not None:
        header["parentSession"] = parent_session
    return header


def is_leaf_marker(entry: Entry) -> bool:
    return entry.get("type") == "custom" and entry.get("customType") == LEAF_MARKER_TYPE


def is_position(entry: Entry) -> bool:
    """Can the leaf stand here? Not on a ``label`` (metadata about an entry) or a leaf marker
    (fastagent's, or pi's harness's ``leaf`` entry)."""
    return entry.get("type") not in ("label", "leaf") and not is_leaf_marker(entry)


@dataclass(slots=True)
class SessionContext:
    """What the engine needs from the record for the next request."""

    messages: list[Message]
    model: tuple[str, str] | None = None
    thinking_level: ThinkingLevel | None = None
    activated_tools: list[str] = field(default_factory=list)


class SessionRecord:
    def __init__(
        self,
        session: str,
        header: Entry,
        entries: Iterable[Entry],
        sink: Sink | None = None,
        flush: Flush | None = None,
    ) -> None:
        self.session = session
        self.header = header
        self.entries: list[Entry] = []
        self.by_id: dict[str, Entry] = {}
        self.leaf_id: str | None = None
        self._sink = sink
        self._flush = flush
        self._context: tuple[str | None, SessionContext] | None = None
        self.memo: dict[Any, Any] = {}
        """Scratch space for what other layers derive from this record's entries (a wire
        client's encoded messages); :meth:`continued` copies share it."""
        self.observers: list[Callable[[Sequence[Entry]], None]] = []
        """Called with each batch of new entries once it is written (a second writer follows
        the transcript this way); an observer must not raise."""
        self.extend(entries)

    def extend(self, entries: Iterable[Entry]) -> None:
        """Index entries that follow the ones this record holds (as read from its file)."""
        for entry in entries:
            entry_id = entry.get("id")
            if isinstance(entry_id, str):
                parent = entry.get("parentId")
                if isinstance(parent, str) and parent not in self.by_id and self.leaf_id is not None:
                    entry = {**entry, "parentId": self.leaf_id}  # chain past a lost line
                self.entries.append(entry)
                self.by_id[entry_id] = entry
                self.leaf_id = self._leaf_after(entry)

    def continued(self, sink: Sink | None = None, flush: Flush | None = None) -> SessionRecord:
        """A record over the same entries with its own index, leaf and ``sink``, so a turn can
        write to it while this one stays as read (the entry objects are shared: nothing changes
        an entry once it exists). Costs a copy of the index, not a rebuild."""
        copy = SessionRecord.__new__(SessionRecord)
        copy.session, copy.header = self.session, self.header
        copy.entries, copy.by_id = list(self.entries), dict(self.by_id)
        copy.leaf_id, copy._sink, copy._context = self.leaf_id, sink, self._context
        copy._flush = flush
        copy.memo = self.memo
        copy.observers = []  # whoever opens this copy attaches its own
        return copy

    def _leaf_after(self, entry: Entry) -> str | None:
        if is_leaf_marker(entry):
            parent = entry.get("parentId")
            if isinstance(parent, str) and parent in self.by_id:
                return parent
        if entry.get("type") == "leaf":  # pi's harness: the leaf is the entry it names
            target = entry.get("targetId")
            return target if isinstance(target, str) and target in self.by_id else None
        return str(entry["id"])

    # --- writing ------------------------------------------------------------------------------

    def new_id(self) -> str:
        """An id no entry has yet (pass it as ``id`` to :meth:`append` to name an entry)."""
        return self._new_id()

    def _new_id(self) -> str:
        for _ in range(100):
            candidate = os.urandom(4).hex()  # uuid4().hex[:8] without building a UUID
            if candidate not in self.by_id:
                return candidate
        return str(uuid.uuid4())

    def append(self, entry_type: str, **fields: Any) -> Entry:
        return self.append_many([(entry_type, fields)])[0]

    def append_many(self, items: Sequence[tuple[str, dict[str, Any]]]) -> list[Entry]:
        """Append several entries as one write (one chain under the leaf)."""
        created: list[Entry] = []
        parent = self.leaf_id
        reserved: set[str] = set()
        for entry_type, given in items:
            fields = cap_entry_images(dict(given))
            entry_id = str(fields.pop("id", "") or self._new_id())
            while entry_id in reserved or entry_id in self.by_id:
                entry_id = self._new_id()
            reserved.add(entry_id)
            entry: Entry = {"type": entry_type, "id": entry_id, "parentId": parent, "timestamp": iso_now()}
            entry.update(fields)
            created.append(entry)
            parent = entry_id
        if self._sink is not None:
            self._sink(created)
        for entry in created:
            self.entries.append(entry)
            self.by_id[entry["id"]] = entry
        self.leaf_id = parent
        for observe in list(self.observers):
            observe(created)
        return created

    async def flush(self) -> None:
        """Wait until every entry appended so far is durable; raises (a SessionError) what the
        store could not write. Nothing to wait for with a store that writes as it appends."""
        if self._flush is not None:
            await self._flush()

    def append_message(self, message: Message) -> Entry:
        return self.append("message", message=message)

    def branch(self, entry_id: str | None) -> None:
        """Move the leaf in memory (the next entry hangs under ``entry_id``; ``None`` starts a new
        root). :meth:`move_leaf` makes the move durable."""
        if entry_id is not None and entry_id not in self.by_id:
            raise KeyError(f"Entry {entry_id} not found")
        self.leaf_id = entry_id

    def move_leaf(self, entry_id: str) -> bool:
        """Move the leaf to ``entry_id`` durably (a ``fastagent:leaf`` marker under it); ``False``
        when it is the leaf already (nothing written). KeyError when there is no such position."""
        entry = self.by_id.get(entry_id)
        if entry is None or not is_position(entry):
            raise KeyError(f"Entry {entry_id} not found")
        if entry_id == self.leaf_id:
            return False
        previous, self.leaf_id = self.leaf_id, entry_id
        try:
            self.append("custom", customType=LEAF_MARKER_TYPE, data={"targetId": entry_id})
        except BaseException:
            self.leaf_id = previous
            raise
        self.leaf_id = entry_id  # the marker is not a position: the next entry hangs under its parent
        return True

    def set_name(self, name: str) -> Entry:
        """Record the session's display name (pi's ``session_info``)."""
        return self.append("session_info", name=name)

    @property
    def name(self) -> str | None:
        """The latest non-empty ``session_info`` name."""
        for entry in reversed(self.entries):
            if entry["type"] == "session_info":
                value = entry.get("name")
                if isinstance(value, str) and value.strip():
                    return value.strip()
        return None

    # --- reading ------------------------------------------------------------------------------

    def path(self, leaf_id: str | None = None) -> list[Entry]:
        """The entries from the root to the leaf, in order."""
        out = list(self.ancestors(leaf_id))
        out.reverse()
        return out

    def ancestors(self, leaf_id: str | None = None) -> Iterator[Entry]:
        """The entries from the leaf up to the root (lazily: a caller that stops early walks
        only what it needs)."""
        seen: set[str] = set()
        current = self.by_id.get(leaf_id or self.leaf_id or "")
        while current is not None and current["id"] not in seen:
            seen.add(current["id"])
            yield current
            parent = current.get("parentId")
            current = self.by_id.get(parent) if isinstance(parent, str) else None

    def context(self, leaf_id: str | None = None) -> SessionContext:
        """What the next request carries from the active path (or the path to ``leaf_id``).

        The active path's context is remembered: when the leaf has only moved down since (new
        entries appended, no compaction among them), the next call adds just those entries, so a
        long conversation does not cost a walk of its whole history on every turn."""
        if leaf_id is not None and leaf_id != self.leaf_id:
            return self._full_context(leaf_id)
        ctx = self._advanced_context()
        if ctx is None:
            ctx = self._full_context(None)
        self._context = (self.leaf_id, ctx)
        return SessionContext(list(ctx.messages), ctx.model, ctx.thinking_level, list(ctx.activated_tools))

    def _advanced_context(self) -> SessionContext | None:
        """The remembered context moved down to the current leaf; ``None`` when it cannot be."""
        if self._context is None:
            return None
        known_leaf, known = self._context
        if known_leaf == self.leaf_id:
            return known
        added: list[Entry] = []
        for entry in self.ancestors():
            if entry["id"] == known_leaf:
                break
            if entry["type"] == "compaction" or len(added) >= _ADVANCE_LIMIT:
                return None
            added.append(entry)
        else:
            return None  # the leaf moved to another branch
        ctx = SessionContext(
            list(known.messages), known.model, known.thinking_level, list(known.activated_tools)
        )
        for entry in reversed(added):
            _apply_settings(ctx, entry)
            message = entry_message(entry)
            if message is not None:
                ctx.messages.append(message)
        return ctx

    def _full_context(self, leaf_id: str | None) -> SessionContext:
        path = self.path(leaf_id)
        ctx = SessionContext(messages=[])
        start = -1
        for i, entry in enumerate(path):
            if entry["type"] == "compaction":
                start = i
        if start >= 0:
            compaction = path[start]
            ctx.messages.append(_summary_message(compaction.get("summary", ""), compaction))
            kept = compaction.get("firstKeptEntryId")
            kept_index = next((i for i, e in enumerate(path[:start]) if e["id"] == kept), start)
            visible = path[kept_index:start] + path[start + 1 :]
        else:
            visible = path
        for entry in path:
            _apply_settings(ctx, entry)
        for entry in visible:
            message = entry_message(entry)
            if message is not None:
                ctx.messages.append(message)
        return ctx

    @property
    def message_count(self) -> int:
        return sum(1 for e in self.entries if e["type"] == "message")

    # --- repair -------------------------------------------------------------------------------

    def dangling_tool_calls(self) -> list[tuple[str, str]]:
        """Tool calls of the leaf's assistant message that have no result yet."""
        answered: set[str] = set()
        for entry in self.ancestors():  # from the leaf back: it stops at the first assistant
            if entry["type"] != "message":
                continue
            message = entry["message"]
            role = message.get("role")
            if role == "toolResult":
                answered.add(message.get("toolCallId", ""))
                continue
            if role == "assistant":
                return [
                    (block["id"], block["name"])
                    for block in message.get("content", [])
                    if block.get("type") == "toolCall" and block.get("id") not in answered
                ]
            return []
        return []

    def reconcile(self) -> int:
        """Give every dangling leaf tool call an explicit interrupted error result, except the
        calls waiting for an approval (an answer resumes them, see ``engine/approvals.py``)."""
        waiting = {a.tool_call_id for a in pending_on_branch(self.ancestors())}
        dangling = [d for d in self.dangling_tool_calls() if d[0] not in waiting]
        if dangling:
            results: list[tuple[str, dict[str, Any]]] = []
            for call_id, name in dangling:
                message: ToolResultMessage = {
                    "role": "toolResult",
                    "toolCallId": call_id,
                    "toolName": name,
                    "content": [{"type": "text", "text": INTERRUPTED_TOOL_TEXT}],
                    "details": {"fastagent": "interrupted-tool-call"},
                    "isError": True,
                    "timestamp": now_ms(),
                }
                results.append(("message", {"message": message}))
            self.append_many(results)
        return len(dangling)


def _summary_message(summary: str, entry: Entry) -> Message:
    """The summary as the user message the context starts with, stamped with the compaction's
    time: usage reported by an answer older than it (a kept one) no longer measures the context."""
    text = f"{COMPACTION_SUMMARY_PREFIX}<summary>\n{summary}\n</summary>"
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": _stamp_ms(entry)}


def _stamp_ms(entry: Entry) -> int:
    stamp = entry.get("timestamp")
    if not isinstance(stamp, str):
        return 0
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


def _apply_settings(ctx: SessionContext, entry: Entry) -> None:
    """What an entry on the path changes in the session's settings."""
    kind = entry["type"]
    if kind == "model_change":
        ctx.model = (str(entry.get("provider", "")), str(entry.get("modelId", "")))
    elif kind == "thinking_level_change":
        ctx.thinking_level = entry.get("thinkingLevel")
    elif kind == "custom" and entry.get("customType") == TOOL_ACTIVATION_TYPE:
        names = (entry.get("data") or {}).get("names") or []
        ctx.activated_tools.extend(n for n in names if isinstance(n, str))


def entry_message(entry: Entry) -> Message | None:
    """The message an entry puts in the model's context (``None``: it puts none)."""
    kind = entry["type"]
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") in ("user", "assistant", "toolResult"):
            return message  # type: ignore[return-value]
        return None
    if kind == "custom_message":
        content = entry.get("content", "")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        return cast(Message, {"role": "user", "content": blocks, "timestamp": 0})
    if kind == "branch_summary" and entry.get("summary"):
        text = (
            "The following is a summary of a branch that this conversation came back from:\n\n"
            f"<summary>\n{entry['summary']}</summary>"
        )
        return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}
    return None
