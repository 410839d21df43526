"""``edit``: targeted replacements in one file, as pi's multi-edit tool does them.

Arguments are ``{path, edits: [{oldText, newText}, ...]}``; the legacy top-level ``oldText`` /
``newText`` pair is folded into ``edits`` and an ``edits`` list sent as a JSON string is parsed.
The BOM and the file's line endings (CRLF or LF) are kept. Edits and writes to the same file are
serialised.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import pydantic
from pydantic import ConfigDict, Field

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
from fastagent_cli.tools.coding.edit_diff import display_diff, unified_patch
from fastagent_cli.tools.coding.edit_match import (
    Edit,
    apply_edits,
    detect_line_ending,
    normalize_to_lf,
    restore_line_endings,
    strip_bom,
)
from fastagent_cli.tools.coding.paths import resolve_to_cwd

__all__ = ["create_edit_tool", "prepare_edit_arguments"]

DESCRIPTION = (
    "Edit a file by replacing exact text. The oldText must match exactly (including whitespace). "
    "Use this for precise, surgical edits."
)
SNIPPET = "Make surgical edits to files (find exact text and replace)"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
        "edits": {
            "type": "array",
            "description": (
                "One or more targeted replacements. Each edit is matched against the original file, not "
                "incrementally. Do not include overlapping or nested edits. If two changes touch the same "
                "block or nearby lines, merge them into one edit instead."
            ),
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {
                        "type": "string",
                        "description": (
                            "Exact text for one targeted replacement. It must be unique in the original file "
                            "and must not overlap with any other edits[].oldText in the same call."
                        ),
                    },
                    "newText": {"type": "string", "description": "Replacement text for this targeted edit."},
                },
                "required": ["oldText", "newText"],
            },
        },
    },
    "required": ["path", "edits"],
}
EMPTY_EDITS = "Edit tool input is invalid. edits must contain at least one replacement."


class _Replacement(pydantic.BaseModel):
    model_config = ConfigDict(populate_by_name=False)
    old_text: str = Field(alias="oldText")
    new_text: str = Field(alias="newText")


class EditArgs(pydantic.BaseModel):
    path: str
    edits: list[_Replacement]


def prepare_edit_arguments(args: Mapping[str, Any]) -> dict[str, Any]:
    """Fold the legacy ``oldText``/``newText`` into ``edits``; parse ``edits`` sent as JSON text."""
    prepared = dict(args)
    if isinstance(prepared.get("edits"), str):
        try:
            parsed = json.loads(prepared["edits"])
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            prepared["edits"] = parsed
    old, new = prepared.get("oldText"), prepared.get("newText")
    if isinstance(old, str) and isinstance(new, str):
        edits = list(prepared["edits"]) if isinstance(prepared.get("edits"), list) else []
        edits.append({"oldText": old, "newText": new})
        prepared.pop("oldText")
        prepared.pop("newText")
        prepared["edits"] = edits
    return prepared


def _edit(path: str, absolute: str, edits: list[Edit]) -> ToolResult:
    if not os.access(absolute, os.R_OK | os.W_OK):
        raise ToolFailure(f"File not found: {path}")
    try:
        with open(absolute, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ToolFailure(node_error(exc, "read", absolute)) from None
    bom, content = strip_bom(raw.decode("utf-8", "replace"))
    ending = detect_line_ending(content)
    original = normalize_to_lf(content)
    updated = apply_edits(original, edits, path)
    final = bom + restore_line_endings(updated, ending)
    try:
        with open(absolute, "wb") as handle:
            handle.write(well_formed(final).encode("utf-8"))
    except OSError as exc:
        raise ToolFailure(node_error(exc, "open", absolute)) from None
    diff, first_changed = display_diff(original, updated)
    details: dict[str, Any] = {"diff": diff, "patch": unified_patch(path, original, updated)}
    if first_changed is not None:
        details["firstChangedLine"] = first_changed
    text = f"Successfully replaced {len(edits)} block(s) in {path}."
    return ToolResult([{"type": "text", "text": text}], details=details)


def create_edit_tool(cwd: str) -> Tool:
    @failures_as_results
    async def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        parsed = parse_args(EditArgs, prepare_edit_arguments(args))
        if isinstance(parsed, ToolResult):
            return parsed
        if not parsed.edits:
            raise ToolFailure(EMPTY_EDITS)
        edits = [Edit(e.old_text, e.new_text) for e in parsed.edits]
        absolute = resolve_to_cwd(parsed.path, cwd)
        async with file_mutation(absolute):
            return await run_blocking(_edit, parsed.path, absolute, edits)

    return Tool("edit", DESCRIPTION, SCHEMA, execute, prompt_snippet=SNIPPET)
