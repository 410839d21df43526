"""MCP stdio servers as tool sources (``[mcp_servers.<name>]`` in ``fastagent.toml``).

::

    source = McpToolSource(config.mcp_servers, workspace)
    tools = await source.tools()      # starts the servers, lists their tools
    ...
    await source.aclose()             # stops them (no process left behind)

Each server starts on first use and stays up for the life of the process; one that died is
restarted on its next call. Its tools are named ``<server>__<tool>`` and keep their JSON
schemas; errors (``isError`` results, protocol errors, a dead server) are error results. A
server that cannot start is a diagnostic (:meth:`McpToolSource.diagnostics`), never an
exception, and the other servers' tools keep working. This package is the only place that
imports the ``mcp`` SDK (pinned to the 2.x API); import it only when a server is configured.

The child gets the SDK's minimal environment (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``,
``TERM``, ``USER``) plus the server's ``env`` table; its working directory is the server's
``cwd`` (relative to the workspace) or the workspace. Its stderr goes to the
``fastagent.mcp`` logger at debug level.

A remote server behind OAuth gets its bearer tokens from ``tokens`` (the assembly hands in the
agent's ``auth.json``, see :mod:`fastagent_cli.tools.mcp_auth`); without a usable login its
start failure and its tools' results say which ``fastagent login mcp:<name>`` to run.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fastagent_cli.control import Notice
from fastagent_cli.tools.base import Tool, ToolContext, ToolResult
from fastagent_cli.tools.mcp.connection import StartFailure
from fastagent_cli.tools.mcp.convert import tool_name
from fastagent_cli.tools.mcp.resources import McpResources
from fastagent_cli.tools.mcp.server import McpServer
from fastagent_cli.tools.mcp.watch import ResourceWatch
from fastagent_cli.tools.mcp_auth import TokenFactory
from fastagent_cli.tools.mcp_config import McpServerConfig

__all__ = ["RETRY_START_S", "McpToolSource"]

RETRY_START_S = 60.0
"""A server that could not start is tried again by :meth:`McpToolSource.tools` after this long."""


def _mcp_tool(server: McpServer, name: str, remote: Any) -> Tool:
    remote_name: str = remote.name

    async def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        return await server.call(remote_name, dict(args))

    schema = remote.input_schema if isinstance(remote.input_schema, dict) else {}
    parameters = {"type": "object", "properties": {}, **schema}
    description = remote.description or remote.title or f"{remote_name} (MCP server {server.name})"
    output = remote.output_schema if isinstance(remote.output_schema, dict) else None
    hints = remote.annotations.model_dump(by_alias=True, exclude_none=True) if remote.annotations else None
    return Tool(
        name,
        description,
        parameters,
        execute,
        source=f"mcp:{server.name}",
        output_schema=output,
        annotations=hints or None,
    )


class McpToolSource:
    """The tools of every configured MCP server, started on first use."""

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        cwd: str | os.PathLike[str],
        *,
        tokens: TokenFactory | None = None,
    ) -> None:
        root = Path(cwd).resolve()
        self._configs = dict(servers)
        self._servers = [McpServer(name, config, root, tokens) for name, config in servers.items()]
        self._watch: ResourceWatch | None = None
        self._tools: list[Tool] = []
        self._notes: list[str] = []
        self._lock = asyncio.Lock()

    @property
    def servers(self) -> Sequence[McpServer]:
        return tuple(self._servers)

    @property
    def resources(self) -> McpResources:
        """The servers' resources as plain data (code mode's resource functions)."""
        return McpResources(self._servers)

    async def tools(self) -> list[Tool]:
        """Every server's tools as ``<server>__<tool>``; starts servers not yet running (and
        retries ones that failed to start, at most every :data:`RETRY_START_S`)."""
        async with self._lock:
            now = asyncio.get_running_loop().time()
            due = [
                s
                for s in self._servers
                if s.tools is None and (s.failed_at is None or now - s.failed_at >= RETRY_START_S)
            ]
            if due:
                await asyncio.gather(*(self._load(s) for s in due))
                self._build()
            return list(self._tools)

    async def _load(self, server: McpServer) -> None:
        try:
            await server.list_tools()
        except StartFailure:
            pass  # recorded on the server, reported by diagnostics()

    def _build(self) -> None:
        tools: list[Tool] = []
        notes: list[str] = []
        seen: dict[str, str] = {}
        for server in self._servers:
            for remote in server.tools or []:
                name = tool_name(server.name, remote.name)
                if name in seen:
                    notes.append(
                        f'mcp server "{server.name}": tool {remote.name!r} is skipped, its name {name} is '
                        f'already used by server "{seen[name]}"'
                    )
                    continue
                seen[name] = server.name
                tools.append(_mcp_tool(server, name, remote))
        self._tools, self._notes = tools, notes

    def diagnostics(self) -> list[str]:
        """One line per problem: servers that cannot start, tool names that clash, watches."""
        found = [f'mcp server "{s.name}": cannot start: {s.error}' for s in self._servers if s.error]
        watching = self._watch.problems if self._watch is not None else []
        return found + list(self._notes) + [p for p in watching if p not in found]

    async def start_watches(self, deliver: Callable[[Notice], None], state_path: Path) -> list[Notice]:
        """Watch every ``watch`` resource (see :mod:`.watch`): updates go to ``deliver`` as
        notices; returns the notices of resources that changed since the last run."""
        if self._watch is not None:
            return []
        servers = [(s, self._configs[s.name].watch_debounce_ms / 1000) for s in self._servers]
        self._watch = ResourceWatch(servers, state_path, deliver)
        return await self._watch.start()

    async def aclose(self) -> None:
        """Stop watching and every server; waits until their processes are gone."""
        if self._watch is not None:
            await self._watch.aclose()
        await asyncio.gather(*(s.aclose() for s in self._servers))
