"""Session records as the hub publishes them: entries, usage and list rows (pure conversions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastagent_cli.control import EntryView, SessionListing, SessionUsage
from fastagent_cli.engine.compaction import context_tokens
from fastagent_cli.messages import is_failed_turn
from fastagent_cli.models.token_counts import conversation_counts
from fastagent_cli.models.types import ToolSpec
from fastagent_cli.sessions.listing import SessionSummary, parse_iso_ms
from fastagent_cli.sessions.record import SessionRecord, is_position

__all__ = ["entry_view", "listing", "published_entries", "session_usage"]


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content or [] if b.get("type") == "text")


def _user(message: Mapping[str, Any]) -> dict[str, Any]:
    """``{text, images?: [{mimeType, data}], documents?: [{mimeType, name, bytes}]}``: the prompt,
    its images as the record keeps them (a transcript shows them again after a reload) and its
    documents named (with their size; the PDF itself stays in the record, out of every listing)."""
    data: dict[str, Any] = {"text": _text(message)}
    content = message.get("content")
    blocks = [b for b in (content if isinstance(content, list) else ()) if isinstance(b, Mapping)]
    images = [
        {"mimeType": str(b.get("mimeType", "")), "data": b["data"]}
        for b in blocks
        if b.get("type") == "image" and isinstance(b.get("data"), str)
    ]
    if images:
        data["images"] = images
    documents = [
        {
            "mimeType": str(b.get("mimeType", "")),
            "name": str(b.get("name", "")),
            "bytes": _decoded_size(b["data"]),
        }
        for b in blocks
        if b.get("type") == "document" and isinstance(b.get("data"), str)
    ]
    if documents:
        data["documents"] = documents
    return data


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")


def _assistant(message: Mapping[str, Any]) -> dict[str, Any]:
    """``{text, thinking?, toolCalls?: [{id, name, args}], stopReason?, errorMessage?}``: what a
    transcript shows of an answer (``stopReason`` only for the partial answer of an ``aborted`` or
    ``error`` turn, and ``length`` for one cut off at the output limit)."""
    blocks = [b for b in message.get("content") or [] if isinstance(b, Mapping)]
    data: dict[str, Any] = {"text": _text(message)}
    thinking = "".join(str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking")
    if thinking:
        data["thinking"] = thinking
    calls = [
        {"id": str(b.get("id", "")), "name": str(b.get("name", "")), "args": b.get("arguments") or {}}
        for b in blocks
        if b.get("type") == "toolCall"
    ]
    if calls:
        data["toolCalls"] = calls
    if is_failed_turn(message):
        data["stopReason"] = message["stopReason"]
        data["errorMessage"] = str(message.get("errorMessage") or "")
    elif message.get("stopReason") == "length":
        data["stopReason"] = "length"  # cut off at the output limit: a transcript marks it
    return data


def entry_view(entry: Mapping[str, Any]) -> EntryView:
    """A record entry normalised: ``user{text, images?, documents?}``, ``assistant{text,
    thinking?, toolCalls?}``, ``tool{toolCallId, toolName, isError, text}``, ``message:<role>``,
    other types with empty data."""
    message = entry.get("message") if entry.get("type") == "message" else None
    stamp = parse_iso_ms(entry.get("timestamp"))
    if stamp is None and isinstance(message, Mapping) and isinstance(message.get("timestamp"), int):
        stamp = message["timestamp"]
    kind = str(entry.get("type"))
    data: dict[str, Any] = {}
    if isinstance(message, Mapping):
        role = message.get("role")
        if role == "user":
            kind, data = "user", _user(message)
        elif role == "assistant":
            kind, data = "assistant", _assistant(message)
        elif role == "toolResult":
            kind = "tool"
            data = {
                "toolCallId": str(message.get("toolCallId", "")),
                "toolName": str(message.get("toolName", "")),
                "isError": bool(message.get("isError", False)),
                "text": _text(message),
            }
        else:
            kind = f"message:{role}"
    parent = entry.get("parentId")
    return EntryView(str(entry["id"]), stamp or 0, kind, data, parent if isinstance(parent, str) else None)


def published_entries(record: SessionRecord, since: str | None) -> list[EntryView]:
    """Every position of the record in append order (labels and leaf markers are not positions),
    after ``since`` when it is one of them."""
    entries = [e for e in record.entries if is_position(e)]
    if since is not None:
        index = next((i for i, e in enumerate(entries) if e["id"] == since), None)
        if index is not None:
            entries = entries[index + 1 :]
    return [entry_view(e) for e in entries]


def session_usage(
    record: SessionRecord,
    context_window: int,
    overhead: tuple[str, Sequence[ToolSpec]] = ("", ()),
) -> SessionUsage | None:
    """The newest answer's numbers on the active path; ``context_tokens`` unknown after a
    compaction until the next answer. ``context_tokens`` is measured as the engine measures a
    request against the window: ``overhead`` (the system prompt and the tool definitions) counts
    when no answer reported usage."""
    path = record.path()
    compacted = False
    for entry in reversed(path):
        if entry["type"] == "compaction":
            compacted = True
            continue
        message = entry.get("message") if entry["type"] == "message" else None
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        usage = message.get("usage")
        if message.get("stopReason") in ("error", "aborted") or not isinstance(usage, Mapping):
            continue
        cost = usage.get("cost")
        if not isinstance(cost, Mapping):
            cost = {}
        return SessionUsage(
            input_tokens=int(usage.get("input") or 0),
            output_tokens=int(usage.get("output") or 0),
            cache_read_tokens=int(usage.get("cacheRead") or 0),
            cache_write_tokens=int(usage.get("cacheWrite") or 0),
            cost=float(cost.get("total") or 0.0),
            context_tokens=None if compacted else _context_tokens(record, overhead),
            context_window=context_window,
        )
    return None


def listing(summaries: Sequence[SessionSummary]) -> list[SessionListing]:
    return [
        SessionListing(
            session=s.session,
            created_at=int(s.created * 1000),
            updated_at=int(s.modified * 1000),
            message_count=s.message_count,
            name=s.name,
            preview=s.preview,
        )
        for s in summaries
    ]


def _context_tokens(record: SessionRecord, overhead: tuple[str, Sequence[ToolSpec]]) -> int:
    """The context's size as the engine measures it, from the record's kept message counts."""
    counts = conversation_counts(record.memo)
    return context_tokens(record.context().messages, *overhead, counts=counts)
