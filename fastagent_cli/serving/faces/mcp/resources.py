"""The agent's sessions as MCP resources: ``fastagent://session/<id>`` (percent-encoded), the
transcript as Markdown.

``resources/list`` pages through the sessions, most recently written first (:data:`PAGE_SIZE`
each, an opaque ``nextCursor``); ``resources/read`` renders one: each user and assistant message
under its role, the tools the assistant called, and each tool's outcome in one line. A session
that does not exist is ``-32002`` (resource not found), as the protocol says.

Offered on ``fastagent mcp`` (the user who launched it owns the files) and on ``/mcp`` only when
the session control plane is on (``session_control = true``): listing every conversation of a
served agent is the plane's business, not every ``/invoke`` caller's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

from fastagent_cli.control import EntryView, SessionCollection

__all__ = ["PAGE_SIZE", "RESOURCE_NOT_FOUND", "ResourceError", "list_sessions", "read_session"]

PAGE_SIZE = 100
RESOURCE_NOT_FOUND = -32002
URI_PREFIX = "fastagent://session/"
_TOOL_TEXT_MAX = 200


class ResourceError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def session_uri(session: str) -> str:
    return URI_PREFIX + quote(session, safe="")


async def list_sessions(sessions: SessionCollection, cursor: Any) -> dict[str, Any]:
    start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
    listed = sorted(await sessions.list(), key=lambda s: s.updated_at, reverse=True)
    page = listed[start : start + PAGE_SIZE]
    resources = [
        {
            "uri": session_uri(s.session),
            "name": s.session,
            "title": s.name or s.preview or s.session,
            "description": f"{s.message_count} messages" + (f": {s.preview}" if s.preview else ""),
            "mimeType": "text/markdown",
        }
        for s in page
    ]
    result: dict[str, Any] = {"resources": resources}
    if start + PAGE_SIZE < len(listed):
        result["nextCursor"] = str(start + PAGE_SIZE)
    return result


async def read_session(sessions: SessionCollection, uri: Any) -> dict[str, Any]:
    if not isinstance(uri, str) or not uri.startswith(URI_PREFIX):
        raise ResourceError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}")
    session = unquote(uri[len(URI_PREFIX) :])
    if not any(s.session == session for s in await sessions.list()):
        raise ResourceError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}")
    entries = (await sessions.get(session).entries()).entries
    text = render_transcript(session, entries)
    return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}


def render_transcript(session: str, entries: Sequence[EntryView]) -> str:
    lines = [f"# Session {session}", ""]
    for entry in entries:
        data: Mapping[str, Any] = entry.data
        if entry.kind in ("user", "assistant"):
            text = str(data.get("text") or "").strip()
            lines += [f"## {entry.kind}", "", *([text, ""] if text else [])]
            calls = data.get("toolCalls")
            if isinstance(calls, list) and calls:
                names = ", ".join(str(c.get("name")) for c in calls if isinstance(c, dict))
                lines += [f"(called: {names})", ""]
        elif entry.kind == "tool":
            outcome = "failed" if data.get("isError") else "ok"
            detail = " ".join(str(data.get("text") or "").split())[:_TOOL_TEXT_MAX]
            lines += [f"> tool {data.get('toolName')} {outcome}: {detail}", ""]
    return "\n".join(lines).rstrip() + "\n"
