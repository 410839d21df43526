"""Turning MCP SDK values into fastagent ones: tool names, tool results, one-line error texts."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import mcp_types

from fastagent_cli.messages import ContentBlock
from fastagent_cli.tools.base import ToolResult
from mcp.shared.exceptions import MCPError

__all__ = ["describe_error", "tool_name", "tool_result"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """``<server>__<tool>``, with characters model APIs refuse in tool names replaced by ``_``."""
    return f"{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"


def _blocks(item: Any) -> list[ContentBlock]:
    if isinstance(item, mcp_types.TextContent):
        return [{"type": "text", "text": item.text}]
    if isinstance(item, mcp_types.ImageContent):
        return [{"type": "image", "data": item.data, "mimeType": item.mime_type}]
    if isinstance(item, mcp_types.AudioContent):
        size = len(item.data) * 3 // 4
        return [{"type": "text", "text": f"[audio {item.mime_type}, about {size} bytes, not shown]"}]
    if isinstance(item, mcp_types.ResourceLink):
        about = f": {item.description}" if item.description else ""
        return [{"type": "text", "text": f"[resource {item.name} at {item.uri}{about}]"}]
    if isinstance(item, mcp_types.EmbeddedResource):
        resource = item.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return [{"type": "text", "text": resource.text}]
        mime = resource.mime_type or "application/octet-stream"
        if mime.startswith("image/"):
            return [{"type": "image", "data": resource.blob, "mimeType": mime}]
        size = len(resource.blob) * 3 // 4
        return [{"type": "text", "text": f"[binary resource {resource.uri} ({mime}), about {size} bytes]"}]
    return [{"type": "text", "text": f"[unsupported MCP content: {type(item).__name__}]"}]


def tool_result(server: str, tool: str, result: mcp_types.CallToolResult) -> ToolResult:
    """A ``tools/call`` result as a tool result; ``isError`` results stay errors."""
    content: list[ContentBlock] = [block for item in result.content for block in _blocks(item)]
    details: dict[str, Any] = {"server": server, "tool": tool}
    if result.structured_content is not None:
        details["structuredContent"] = result.structured_content
        if not content:
            content = [{"type": "text", "text": json.dumps(result.structured_content, ensure_ascii=False)}]
    if not content:
        content = [{"type": "text", "text": "(no output)"}]
    return ToolResult(content, details=details, is_error=bool(result.is_error))


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def describe_error(exc: BaseException, command: str | None = None) -> str:
    """The most telling failure inside ``exc`` (exception groups unwrapped), in one line."""
    leaves = [e for e in _leaves(exc) if not isinstance(e, GeneratorExit)]
    leaf = next((e for e in leaves if not _is_cancel(e)), leaves[0] if leaves else exc)
    if isinstance(leaf, FileNotFoundError) and command is not None:
        return f"command not found: {command}"
    if isinstance(leaf, PermissionError) and command is not None:
        return f"permission denied running {command}"
    if isinstance(leaf, MCPError):
        return leaf.message or str(leaf)
    if isinstance(leaf, OSError) and leaf.strerror:
        return leaf.strerror
    text = " ".join(str(leaf).split())
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _is_cancel(exc: BaseException) -> bool:
    return isinstance(exc, asyncio.CancelledError)
