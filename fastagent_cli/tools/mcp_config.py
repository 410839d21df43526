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
    watch: list[str] = Field(default_factory=list)
    """Resource URIs to subscribe to while serving: each update becomes a notice."""
    watch_debounce_ms: int = Field(default=500, ge=0, le=600_000)
    """Updates of one resource within this window are one notice."""
    code_mode: bool | None = None
    """Call this server's tools from ``run_code`` (``None``: the agent's ``code_mode``)."""
