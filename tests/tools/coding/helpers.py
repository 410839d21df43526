"""Helpers for the coding-tool tests: run a tool directly and read its text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastagent_cli.tools.base import ReadonlySession, ToolContext, ToolResult
from fastagent_cli.tools.coding import coding_tools


class FakeSession(ReadonlySession):
    """A session view that only knows its id (what ``bash`` reads)."""

    def __init__(self, session_id: str) -> None:
        self._id = session_id

    def get_session_id(self) -> str:
        return self._id


async def run_tool(name: str, cwd: Path, session: str | None = None, **args: Any) -> ToolResult:
    (tool,) = coding_tools([name], cwd)
    ctx = ToolContext(cwd=str(cwd), session=FakeSession(session) if session is not None else None)
    return await tool.execute(args, ctx)


def text_of(result: ToolResult) -> str:
    assert result.content and result.content[0]["type"] == "text", result.content
    text = result.content[0]["text"]
    assert isinstance(text, str)
    return text
