"""``[mcp_servers.<name>]``: how to start one stdio MCP server.

The type lives with the tools that use it (:mod:`fastagent_cli.tools.mcp`), below the definition
that reads it from ``fastagent.toml``; importing it does not import the ``mcp`` SDK.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["McpServerConfig"]


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
