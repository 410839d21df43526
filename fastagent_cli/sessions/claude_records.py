"""Claude Code's transcript records for pi session entries (see :mod:`.claude_code`).

Every record of an entry is computed from the entry alone (its uuids derived from the file's
session id and the entry id), so a restarted writer recomputes the same records and the chain
(``parentUuid``) is arithmetic, never stored state.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fastagent_cli._version import __version__
from fastagent_cli.sessions.record import SessionRecord

__all__ = ["ClaudeFile", "ClaudeRecords"]

Entry = dict[str, Any]
_NOTICE = "fastagent:notice"
_STOP = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}


def _blocks(content: Any) -> str | list[dict[str, Any]]:
    """pi content (a string, or text and image blocks) as Anthropic content."""
    if isinstance(content, str):
        return content
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    if all(b.get("type") == "text" for b in blocks) and len(blocks) == 1:
        return str(blocks[0].get("text", ""))
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "image":
            source = {"type": "base64", "media_type": block.get("mimeType"), "data": block.get("data")}
            out.append({"type": "image", "source": source})
        else:
            out.append({"type": "text", "text": str(block.get("text", ""))})
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [
        str(b.get("text", "")) for b in content or [] if isinstance(b, Mapping) and b.get("type") == "text"
    ]
    return "\n".join(parts)


class ClaudeFile:
    """One Claude Code transcript: its id, path, the uuids it holds, the chain arithmetic."""

    def __init__(self, session_id: str, path: Path, cwd: str, branch: str) -> None:
        self.session_id = session_id
        self.path = path
        self.cwd = cwd
        self.branch = branch
        self.namespace = uuid.UUID(session_id)
        self.present: set[str] = set()
        self.tails: dict[str, str | None] = {}

    def uid(self, entry_id: str, index: int) -> str:
        return str(uuid.uuid5(self.namespace, f"{entry_id}:{index}"))

    def envelope(
        self,
        kind: str,
        parent: str | None,
        uid: str,
        timestamp: str,
        body: Mapping[str, Any],
        after: Mapping[str, Any] | None = None,
        *,
        head: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A chain record with Claude Code's key order: the envelope, ``head`` (keys Claude Code
        puts before ``type``), ``type`` and ``body`` (an assistant record has ``type`` after its
        body), ``uuid`` and ``timestamp``, then ``after``."""
        record: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": __version__,
            "gitBranch": self.branch,
            **(head or {}),
        }
        if kind == "assistant":
            record.update(body)
            record["type"] = kind
        else:
            record["type"] = kind
            record.update(body)
        record.update({"uuid": uid, "timestamp": timestamp, **(after or {})})
        return record

    def queue(self, operation: str, timestamp: str, **fields: Any) -> dict[str, Any]:
        head = {"type": "queue-operation", "operation": operation, "timestamp": timestamp}
        return {**head, "sessionId": self.session_id, **fields}


class ClaudeRecords:
    """The Claude Code records of a pi entry (computed, so a restart recomputes the same ones)."""

    def __init__(self, file: ClaudeFile, record: SessionRecord) -> None:
        self.file = file
        self.record = record
        self.calls: dict[str, str] = {}
        """tool_use id -> the uuid of the assistant record holding it."""

    def tail(self, entry_id: str | None) -> str | None:
        """The uuid of the last chain record written for ``entry_id`` or, when it writes none,
        for its nearest ancestor that does (``None`` at the root)."""
        if entry_id is None:
            return None
        tails = self.file.tails
        if entry_id not in tails:
            entry = self.record.by_id.get(entry_id)
            chained = [r["uuid"] for r in self.of(entry, None) if "uuid" in r] if entry is not None else []
            if chained:
                tails[entry_id] = chained[-1]
            else:
                parent = entry.get("parentId") if entry is not None else None
                tails[entry_id] = self.tail(parent if isinstance(parent, str) else None)
        return tails[entry_id]

    def of(self, entry: Entry, parent: str | None) -> list[dict[str, Any]]:
        """The records of ``entry`` (``parent``: the uuid its first chain record hangs under)."""
        file = self.file
        eid = str(entry["id"])
        ts = str(entry.get("timestamp", ""))
        kind = entry.get("type")
        if kind == "message":
            return self._message(entry["message"], eid, ts, parent)
        if kind == "custom_message" and entry.get("customType") == _NOTICE:
            text = _text(entry.get("content"))
            attachment = {"type": "queued_command", "prompt": text, "commandMode": "task-notification"}
            return [
                file.queue("enqueue", ts, content=text),
                file.queue("remove", ts),
                file.envelope("attachment", parent, file.uid(eid, 0), ts, {"attachment": attachment}),
            ]
        if kind == "custom_message":
            content = _blocks(entry.get("content", ""))
            meta_message = {"message": {"role": "user", "content": content}, "isMeta": True}
            return [file.envelope("user", parent, file.uid(eid, 0), ts, meta_message)]
        if kind == "compaction":
            boundary = file.uid(eid, 0)
            meta = {"trigger": "auto", "preTokens": entry.get("tokensBefore", 0)}
            summary = (
                "This session is being continued from a previous conversation that ran out of context. "
                f"The conversation is summarized below:\n{entry.get('summary', '')}"
            )
            system: dict[str, Any] = {
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "isMeta": False,
                "level": "info",
                "compactMetadata": meta,
            }
            summary_message: dict[str, Any] = {
                "message": {"role": "user", "content": summary},
                "isVisibleInTranscriptOnly": True,
                "isCompactSummary": True,
            }
            return [
                file.envelope("system", None, boundary, ts, system, head={"logicalParentUuid": parent}),
                file.envelope("user", boundary, file.uid(eid, 1), ts, summary_message),
            ]
        if kind == "session_info" and isinstance(entry.get("name"), str) and entry["name"].strip():
            return [
                {"type": "custom-title", "customTitle": entry["name"].strip(), "sessionId": file.session_id}
            ]
        return []

    def _message(
        self, message: Mapping[str, Any], eid: str, ts: str, parent: str | None
    ) -> list[dict[str, Any]]:
        file = self.file
        role = message.get("role")
        if role == "user":
            content: dict[str, Any] = {"role": "user", "content": _blocks(message.get("content", ""))}
            return [file.envelope("user", parent, file.uid(eid, 0), ts, {"message": content})]
        if role == "toolResult":
            call_id = str(message.get("toolCallId", ""))
            block = {
                "tool_use_id": call_id,
                "type": "tool_result",
                "content": _blocks(message.get("content", [])),
                "is_error": bool(message.get("isError")),
            }
            source = self._assistant_of(call_id)
            extra = {"sourceToolAssistantUUID": source} if source else {}
            result = {"message": {"role": "user", "content": [block]}}
            after = {"toolUseResult": _text(message.get("content")), **extra}
            return [file.envelope("user", parent, file.uid(eid, 0), ts, result, after)]
        if role != "assistant":
            return []
        blocks = self._assistant_blocks(message.get("content") or [])
        usage = message.get("usage") or {}
        calls = any(b["type"] == "tool_use" for b in blocks)
        stop = "tool_use" if calls else _STOP.get(str(message.get("stopReason")))
        records = []
        for index, block in enumerate(blocks):
            body = {
                "model": message.get("model", ""),
                "id": f"msg_{eid}",
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": int(usage.get("input", 0) or 0),
                    "cache_creation_input_tokens": int(usage.get("cacheWrite", 0) or 0),
                    "cache_read_input_tokens": int(usage.get("cacheRead", 0) or 0),
                    "output_tokens": int(usage.get("output", 0) or 0),
                },
            }
            uid = file.uid(eid, index)
            if block["type"] == "tool_use":
                self.calls[str(block["id"])] = uid
            record = {"message": body, "requestId": f"req_{eid}"}
            records.append(file.envelope("assistant", parent, uid, ts, record))
            parent = uid
        return records

    @staticmethod
    def _assistant_blocks(content: Sequence[Any]) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind == "text" and block.get("text"):
                blocks.append({"type": "text", "text": block["text"]})
            elif kind == "thinking" and block.get("thinking"):
                signature = str(block.get("thinkingSignature") or "")
                blocks.append({"type": "thinking", "thinking": block["thinking"], "signature": signature})
            elif kind == "toolCall":
                call = {
                    "id": block.get("id"),
                    "name": block.get("name"),
                    "input": block.get("arguments") or {},
                }
                blocks.append({"type": "tool_use", **call})
        return blocks

    def _assistant_of(self, call_id: str) -> str | None:
        if call_id in self.calls:
            return self.calls[call_id]
        for entry in reversed(self.record.entries):
            message = entry.get("message") if entry.get("type") == "message" else None
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                blocks = self._assistant_blocks(message.get("content") or [])
                for index, block in enumerate(blocks):
                    if block["type"] == "tool_use" and block["id"] == call_id:
                        return self.file.uid(str(entry["id"]), index)
        return None
