"""``read``: a file's text (head-truncated, with continuation hints) or an image."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from typing import Any

import pydantic

from fastagent_cli.tools.base import Tool, ToolContext, ToolResult
from fastagent_cli.tools.coding._common import (
    ToolFailure,
    failures_as_results,
    js_number,
    node_error,
    parse_args,
    run_blocking,
)
from fastagent_cli.tools.coding.paths import resolve_read_path
from fastagent_cli.tools.coding.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    format_size,
    truncate_head,
)

__all__ = ["MAX_IMAGE_BYTES", "create_read_tool", "detect_image_mime"]

DESCRIPTION = (
    "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent "
    f"as attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines or "
    f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). Use offset/limit for large files. When you "
    "need the full file, continue with offset until complete."
)
SNIPPET = "Read file contents"
MAX_IMAGE_BYTES = int(4.5 * 1024 * 1024)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
        "offset": {"type": "integer", "description": "Line number to start reading from (1-indexed)"},
        "limit": {"type": "integer", "description": "Maximum number of lines to read"},
    },
    "required": ["path"],
}


class ReadArgs(pydantic.BaseModel):
    path: str
    offset: int | None = None
    limit: int | None = None


def detect_image_mime(head: bytes) -> str | None:
    """The MIME type of a supported image (jpeg, png, gif, webp) from its first bytes."""
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _load(absolute: str) -> bytes:
    if not os.access(absolute, os.R_OK):
        code = 2 if not os.path.lexists(absolute) else 13
        raise ToolFailure(node_error(OSError(code, os.strerror(code)), "access", absolute))
    try:
        with open(absolute, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ToolFailure(node_error(exc, "read", absolute)) from None


def _image(path: str, data: bytes, mime: str) -> ToolResult:
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolFailure(
            f"Image {path} is {format_size(len(data))}, over the {format_size(MAX_IMAGE_BYTES)} image limit. "
            "Resize or compress it first (for example with bash), then read the smaller file."
        )
    encoded = base64.b64encode(data).decode("ascii")
    return ToolResult(
        [
            {"type": "text", "text": f"Read image file [{mime}]"},
            {"type": "image", "data": encoded, "mimeType": mime},
        ]
    )


def _text(path: str, data: bytes, offset: int | None, limit: int | None) -> ToolResult:
    all_lines = data.decode("utf-8", "replace").split("\n")
    total = len(all_lines)
    start = max(0, offset - 1) if offset else 0
    if start >= total:
        raise ToolFailure(f"Offset {js_number(offset or 0)} is beyond end of file ({total} lines total)")
    user_limited: int | None = None
    if limit is not None:
        end = min(start + max(limit, 0), total)
        selected = "\n".join(all_lines[start:end])
        user_limited = end - start
    else:
        selected = "\n".join(all_lines[start:])
    truncation = truncate_head(selected)
    shown_from = start + 1
    details: dict[str, Any] | None = None
    if truncation.first_line_exceeds_limit:
        size = format_size(len(all_lines[start].encode("utf-8", "surrogatepass")))
        limit_text = format_size(DEFAULT_MAX_BYTES)
        text = (
            f"[Line {shown_from} is {size}, exceeds {limit_text} limit. "
            f"Use bash: sed -n '{shown_from}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
        )
        details = {"truncation": truncation.to_json()}
    elif truncation.truncated:
        shown_to = shown_from + truncation.output_lines - 1
        limit_note = (
            "" if truncation.truncated_by == "lines" else f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
        )
        text = (
            f"{truncation.content}\n\n[Showing lines {shown_from}-{shown_to} of {total}{limit_note}. "
            f"Use offset={shown_to + 1} to continue.]"
        )
        details = {"truncation": truncation.to_json()}
    elif user_limited is not None and start + user_limited < total:
        remaining = total - (start + user_limited)
        next_offset = start + user_limited + 1
        text = (
            f"{truncation.content}\n\n[{remaining} more lines in file. Use offset={next_offset} to continue.]"
        )
    else:
        text = truncation.content
    return ToolResult([{"type": "text", "text": text}], details=details)


def _read(path: str, absolute: str, offset: int | None, limit: int | None) -> ToolResult:
    data = _load(absolute)
    mime = detect_image_mime(data[:4100])
    if mime is not None:
        return _image(path, data, mime)
    return _text(path, data, offset, limit)


def create_read_tool(cwd: str) -> Tool:
    @failures_as_results
    async def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        parsed = parse_args(ReadArgs, args)
        if isinstance(parsed, ToolResult):
            return parsed
        absolute = resolve_read_path(parsed.path, cwd)
        return await run_blocking(_read, parsed.path, absolute, parsed.offset, parsed.limit)

    return Tool("read", DESCRIPTION, SCHEMA, execute, prompt_snippet=SNIPPET)
