"""A stored conversation as text (``fastagent sessions show``) or Markdown (``export --format md``).

Both walk the session's active path (root to leaf): messages with their tool calls, thinking and
results; compactions, branch summaries, model and thinking changes and renames as notes. Entries
on abandoned branches are counted, not shown. The walk yields :class:`Block`\\ s; the two renderers
only spell them differently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fastagent_cli.assembly import StoredSession
from fastagent_cli.control import APPROVAL_DECISION_TYPE, APPROVAL_TYPE

if TYPE_CHECKING:
    from fastagent_cli.state.usage import UsageTotals

__all__ = ["Block", "SaveFile", "blocks", "markdown", "text"]

_IMAGE = "[image: {mime}, {size} KB]"
_DOCUMENT = "[document: {name}, {size} KB]"


@dataclass(slots=True)
class Block:
    kind: str
    """``user``, ``assistant``, ``tool``, ``custom`` or ``note``."""
    title: str
    parts: list[tuple[str, str]] = field(default_factory=list)
    """``(style, text)``: ``text``, ``thinking``, ``call`` (``name json``), ``output``, ``error`` or
    ``image`` (``mime base64``) or ``document`` (``mime name`` and the base64 on the next line)."""


def _when(stamp: Any) -> str:
    if not isinstance(stamp, str):
        return ""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return stamp


def _content(content: Any) -> list[tuple[str, str]]:
    if isinstance(content, str):
        return [("text", content)] if content else []
    parts: list[tuple[str, str]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            parts.append(("text", str(block["text"])))
        elif kind == "thinking" and block.get("thinking"):
            parts.append(("thinking", str(block["thinking"])))
        elif kind == "toolCall":
            args = json.dumps(block.get("arguments", {}), ensure_ascii=False)
            parts.append(("call", f"{block.get('name', '?')} {args}"))
        elif kind == "image":
            parts.append(("image", f"{block.get('mimeType', 'image')} {block.get('data', '')}"))
        elif kind == "document":
            name = " ".join(str(block.get("name") or "document.pdf").split())
            mime = str(block.get("mimeType") or "application/pdf")
            parts.append(("document", f"{mime} {name}\n{block.get('data', '')}"))
    return parts


def _message(entry: Mapping[str, Any]) -> Block | None:
    message = entry.get("message")
    if not isinstance(message, Mapping):
        return None
    role = message.get("role")
    when = _when(entry.get("timestamp"))
    if role == "user":
        return Block("user", f"user · {when}", _content(message.get("content")))
    if role == "assistant":
        block = Block("assistant", f"assistant · {message.get('provider', '?')}/{message.get('model', '?')}")
        block.parts = _content(message.get("content"))
        if message.get("stopReason") in ("error", "aborted"):
            block.parts.append(("error", str(message.get("errorMessage") or message.get("stopReason"))))
        return block
    if role == "toolResult":
        failed = " (error)" if message.get("isError") else ""
        parts = [
            (style if style == "image" else "error" if failed else "output", text)
            for style, text in _content(message.get("content"))
        ]
        return Block("tool", f"tool result · {message.get('toolName', '?')}{failed}", parts)
    if role == "bashExecution":
        output = str(message.get("output") or "(no output)")
        return Block("user", f"user ran `{message.get('command', '')}` · {when}", [("output", output)])
    custom = message.get("customType") or role
    return Block("custom", f"{custom} · {when}", _content(message.get("content")))


def _note(entry: Mapping[str, Any]) -> Block | None:
    kind = entry.get("type")
    if kind == "compaction":
        tokens = entry.get("tokensBefore")
        title = f"compaction ({tokens} tokens before)" if isinstance(tokens, int) else "compaction"
        return Block("note", title, [("text", str(entry.get("summary", "")))])
    if kind == "branch_summary" and entry.get("summary"):
        return Block("note", "summary of an abandoned branch", [("text", str(entry["summary"]))])
    if kind == "model_change":
        return Block("note", f"model: {entry.get('provider')}/{entry.get('modelId')}")
    if kind == "thinking_level_change":
        return Block("note", f"thinking: {entry.get('thinkingLevel')}")
    if kind == "session_info" and isinstance(entry.get("name"), str):
        return Block("note", f"named: {str(entry['name']).strip()}")
    if kind == "custom_message" and entry.get("display", True):
        return Block("custom", str(entry.get("customType", "custom")), _content(entry.get("content")))
    if kind == "custom" and isinstance(entry.get("data"), Mapping):
        return _approval(entry.get("customType"), entry["data"], _when(entry.get("timestamp")))
    return None


def _approval(custom: Any, data: Mapping[str, Any], when: str) -> Block | None:
    """The audit trail of a tool approval: the request, then who decided what, when and why."""
    args = json.dumps(data.get("args"), ensure_ascii=False)
    args = args if len(args) <= 200 else args[:199] + "…"
    if custom == APPROVAL_TYPE:
        return Block("note", f"approval asked · {data.get('tool')} {args} · {data.get('id')} · {when}")
    if custom != APPROVAL_DECISION_TYPE:
        return None
    reason = f": {data['reason']}" if data.get("reason") else ""
    title = (
        f"approval {data.get('decision')} · {data.get('tool')} · by {data.get('by')} "
        f"({data.get('cause')}) · {when}{reason}"
    )
    return Block("note", title)


def blocks(path: Sequence[Mapping[str, Any]]) -> Iterator[Block]:
    for entry in path:
        block = _message(entry) if entry.get("type") == "message" else _note(entry)
        if block is not None:
            yield block


def _facts(stored: StoredSession, usage: UsageTotals | None = None) -> list[tuple[str, str]]:
    facts = [("session", stored.session)]
    if stored.name:
        facts.append(("name", stored.name))
    if stored.path is not None:
        facts.append(("file", str(stored.path)))
    facts.append(("created", _when(stored.header.get("timestamp"))))
    facts.append(("messages", str(stored.message_count)))
    if stored.model:
        facts.append(("model", stored.model + (f" · thinking {stored.thinking}" if stored.thinking else "")))
    if usage is not None:
        from fastagent_cli.cli.usage_view import summary

        facts.append(("usage", summary(usage)))
    hidden = len(stored.entries) - len(stored.active)
    if hidden:
        facts.append(("branches", f"{hidden} entries on other branches are not shown"))
    return facts


def text(stored: StoredSession, usage: UsageTotals | None = None) -> str:
    out = [f"{key:<9} {value}" for key, value in _facts(stored, usage)]
    for block in blocks(stored.active):
        out.append("")
        out.append(f"── {block.title} ──" if block.kind == "note" else f"[{block.title}]")
        for style, body in block.parts:
            if style == "thinking":
                out.append("(thinking) " + body)
            elif style == "call":
                out.append("→ " + body)
            elif style == "error":
                out.append("✗ " + body)
            elif style == "image":
                out.append(_image_note(body))
            elif style == "document":
                out.append(_document_note(body))
            else:
                out.append(body)
    return "\n".join(out) + "\n"


def _image_note(body: str) -> str:
    mime, _, data = body.partition(" ")
    return _IMAGE.format(mime=mime, size=len(data) * 3 // 4 // 1024)


def _document_note(body: str) -> str:
    head, _, data = body.partition("\n")
    return _DOCUMENT.format(name=head.partition(" ")[2], size=len(data) * 3 // 4 // 1024)


def _fence(body: str, lang: str = "") -> str:
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{body}\n{ticks}"


def _heading(block: Block) -> str:
    title = block.title[0].upper() + block.title[1:]
    return f"*{title}*" if block.kind == "note" else f"## {title}"


SaveFile = Callable[[str, str, str], str | None]
"""``(mime type, base64 data, name) -> the file's path relative to the Markdown`` (None: not
saved; ``name`` is a document's, empty for an image)."""


def markdown(stored: StoredSession, save_file: SaveFile | None = None) -> str:
    """The session as Markdown; ``save_file`` writes each image and document (an image linked as
    ``![image: image/png, 12 KB](path)``, a document as ``[document: report.pdf, 80 KB](path)``),
    else each is a note of its type or name and size."""
    from fastagent_cli.cli.export_files import link_target

    title = f"# Session {stored.session}" + (f": {stored.name}" if stored.name else "")
    out = [title, ""]
    out += [
        f"- {key}: `{value}`" if key == "file" else f"- {key}: {value}" for key, value in _facts(stored)[1:]
    ]
    for block in blocks(stored.active):
        out += ["", _heading(block)]
        for style, body in block.parts:
            out.append("")
            if style == "thinking":
                out += ["<details><summary>Thinking</summary>", "", body, "", "</details>"]
            elif style == "call":
                name, _, args = body.partition(" ")
                out += [f"**Tool call** `{name}`", "", _fence(args, "json")]
            elif style in ("output", "error"):
                out.append(_fence(body))
            elif style == "image":
                mime, _, data = body.partition(" ")
                saved = save_file(mime, data, "") if save_file is not None else None
                note = _image_note(body)
                out.append(f"![{note[1:-1]}]({link_target(saved)})" if saved else note)
            elif style == "document":
                head, _, data = body.partition("\n")
                mime, _, name = head.partition(" ")
                saved = save_file(mime, data, name) if save_file is not None else None
                note = _document_note(body)
                label = re.sub(r"([\[\]\\])", r"\\\1", note[1:-1])  # a name's brackets, escaped
                out.append(f"[{label}]({link_target(saved)})" if saved else note)
            elif block.kind == "note":
                out.append("> " + body.replace("\n", "\n> "))
            else:
                out.append(body)
    return "\n".join(out) + "\n"
