"""``write``: create or overwrite a file, creating its parent directories."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pydantic

from fastagent_cli.tools.base import Tool, ToolContext, ToolResult
from fastagent_cli.tools.coding._common import (
    ToolFailure,
    failures_as_results,
    file_mutation,
    node_error,
    parse_args,
    run_blocking,
    well_formed,
)
from fastagent_cli.tools.coding.paths import resolve_to_cwd

__all__ = ["create_write_tool", "js_length"]

DESCRIPTION = (
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
    "Automatically creates parent directories."
)
SNIPPET = "Create or overwrite files"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
        "content": {"type": "string", "description": "Content to write to the file"},
    },
    "required": ["path", "content"],
}


class WriteArgs(pydantic.BaseModel):
    path: str
    content: str


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units (pi reports this as the byte count)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _write(absolute: str, content: str) -> None:
    parent = os.path.dirname(absolute)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise ToolFailure(node_error(exc, "mkdir", parent)) from None
    try:
        with open(absolute, "wb") as handle:
            handle.write(well_formed(content).encode("utf-8"))
    except OSError as exc:
        raise ToolFailure(node_error(exc, "open", absolute)) from None


def create_write_tool(cwd: str) -> Tool:
    @failures_as_results
    async def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        parsed = parse_args(WriteArgs, args)
        if isinstance(parsed, ToolResult):
            return parsed
        absolute = resolve_to_cwd(parsed.path, cwd)
        async with file_mutation(absolute):
            await run_blocking(_write, absolute, parsed.content)
        text = f"Successfully wrote {js_length(parsed.content)} bytes to {parsed.path}"
        return ToolResult([{"type": "text", "text": text}])

    return Tool("write", DESCRIPTION, SCHEMA, execute, prompt_snippet=SNIPPET)
