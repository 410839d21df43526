"""The size limit on every tool result, applied by the engine before a result is stored or sent.

A result is kept whole up to these limits; beyond them it is cut, and the model is told:

* text: the first :data:`MAX_RESULT_TEXT_BYTES` (64 KiB of UTF-8, all text blocks together) are
  kept, then ``[Tool result truncated: showing the first 64.0KB of 10.0MB. ...]``. The built-in
  tools stay under it by themselves (``read`` and ``bash`` cut at pi's 50 KB with their own
  notices), so this catches custom and MCP tools;
* images: up to :data:`MAX_RESULT_IMAGE_BYTES` (5 MiB of base64) in all; a further image becomes
  ``[Image omitted: ...]``;
* ``details`` (for UIs and logs, never sent to the model) over :data:`MAX_RESULT_DETAILS_BYTES` of
  JSON are replaced by ``{"fastagent": "details-omitted", "bytes": N}``.

Without it one 10 MiB result would be stored in the session and resent with every later request,
and the session would never recover.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from fastagent_cli.models.types import ContentBlock
from fastagent_cli.tools.base import ToolResult
from fastagent_cli.tools.coding.truncate import format_size

__all__ = [
    "MAX_RESULT_DETAILS_BYTES",
    "MAX_RESULT_IMAGE_BYTES",
    "MAX_RESULT_TEXT_BYTES",
    "limit_result",
]

MAX_RESULT_TEXT_BYTES = 64 * 1024
MAX_RESULT_IMAGE_BYTES = 5 * 1024 * 1024
MAX_RESULT_DETAILS_BYTES = 64 * 1024


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def limit_result(result: ToolResult) -> ToolResult:
    """``result`` itself when it is within the limits, else a cut copy with notices."""
    text_total = sum(len(_utf8(b["text"])) for b in result.content if b["type"] == "text")
    image_total = sum(len(b["data"]) for b in result.content if b["type"] == "image")
    details_size = _json_size(result.details) if result.details is not None else 0
    if (
        text_total <= MAX_RESULT_TEXT_BYTES
        and image_total <= MAX_RESULT_IMAGE_BYTES
        and details_size <= MAX_RESULT_DETAILS_BYTES
    ):
        return result
    content: list[ContentBlock] = []
    text_left, image_left = MAX_RESULT_TEXT_BYTES, MAX_RESULT_IMAGE_BYTES
    cut = False
    for block in result.content:
        if block["type"] == "image":
            size = len(block["data"])
            if size <= image_left:
                image_left -= size
                content.append(block)
            else:
                text = (
                    f"[Image omitted: {format_size(size)} is over the {format_size(MAX_RESULT_IMAGE_BYTES)}"
                )
                content.append({"type": "text", "text": text + " limit for tool results]"})
            continue
        if cut:
            continue
        raw = _utf8(block["text"])
        if len(raw) <= text_left:
            text_left -= len(raw)
            content.append(block)
            continue
        kept = raw[:text_left].decode("utf-8", "ignore")  # never half a character
        content.append({"type": "text", "text": kept + _notice(text_total)})
        cut = True
    details = result.details
    if details_size > MAX_RESULT_DETAILS_BYTES:
        details = {"fastagent": "details-omitted", "bytes": details_size}
    return replace(result, content=content, details=details)


def _notice(total: int) -> str:
    return (
        f"\n\n[Tool result truncated: showing the first {format_size(MAX_RESULT_TEXT_BYTES)} of "
        f"{format_size(total)}. Ask the tool for less (a narrower query, a smaller range) to see the rest.]"
    )


def _json_size(value: Any) -> int:
    try:
        return len(_utf8(json.dumps(value, ensure_ascii=False, default=str)))
    except (TypeError, ValueError):  # circular or otherwise unserialisable: count its text form
        return len(_utf8(str(value)))
