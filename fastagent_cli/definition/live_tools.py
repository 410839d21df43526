"""The mounted tool set of a directory agent: the static tools plus its MCP servers' tools.

:class:`LiveTools` is the directory agent's tool source (the engine awaits it once per turn, see
:mod:`fastagent_cli.engine.ports`). Static tools (coding tools, config ``tools``, ``tools/``,
``search_tools``) are known at assembly. MCP tools are known only once their servers run, so they
join the table when a turn asks for its tools (:meth:`LiveTools.refresh`), after every static
tool: an MCP tool whose name is taken is reported as a collision and not mounted. A server that
cannot start is a diagnostic, never a failed turn; the ``mcp`` SDK is imported only when a server
is configured.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastagent_cli.control import Notice
from fastagent_cli.definition.tools_loader import ToolCollision
from fastagent_cli.errors import one_line
from fastagent_cli.tools.base import Tool
from fastagent_cli.tools.code_mode.settings import CodeModeSettings
from fastagent_cli.tools.mcp_config import McpServerConfig

if TYPE_CHECKING:
    from fastagent_cli.tools.mcp_auth import TokenFactory

__all__ = ["LiveTools"]

log = logging.getLogger("fastagent.tools")


class LiveTools:
    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        cwd: Path,
        code_mode: CodeModeSettings | None = None,
        *,
        mcp_tokens: TokenFactory | None = None,
    ) -> None:
        self.servers = dict(servers)
        self.cwd = cwd
        self.mcp_tokens = mcp_tokens
        """Where remote servers' OAuth tokens come from (the agent's ``auth.json``)."""
        self._code_settings = code_mode
        self._code_mode: Any = None
        self.static: list[Tool] = []
        self.collisions: list[ToolCollision] = []
        self._table: dict[str, Tool] = {}
        self._source: Any = None
        self._problems: list[str] = []
        self._unavailable = False
        self._lock = asyncio.Lock()
        self._mcp_names: set[str] = set()

    def set_static(self, tools: Sequence[Tool]) -> None:
        """Mount the static tools (the first of a name wins), before any MCP tool."""
        self.static = list(tools)
        self._table = {}
        for tool in self.static:
            self._table.setdefault(tool.name, tool)
        self._mcp_names.clear()

    async def __call__(self) -> Sequence[Tool]:
        """The tools for the turn about to start (the tool source port): what the model is offered."""
        await self.refresh()
        return self.offered()

    def offered(self) -> list[Tool]:
        """The mounted tools as the model sees them: with code mode on, the tools it covers are
        behind ``run_code`` (see :mod:`fastagent_cli.tools.code_mode`)."""
        code_mode = self._code()
        return code_mode.apply(self.mounted()) if code_mode is not None else self.mounted()

    def code_mode_summary(self) -> str | None:
        """What the startup report says about code mode (``None`` when it is off)."""
        code_mode = self._code()
        if code_mode is None:
            return None
        covered = [t.name for t in self.mounted() if code_mode.covers(t)]
        if not code_mode.available():
            return "unavailable (the tools stay native; see the warning)"
        mcp = [name for name, config in self.servers.items() if code_mode.covers_server(name)]
        what = ", ".join(covered) or ("the tools of " + ", ".join(mcp) if mcp else "(no tools yet)")
        return f"run_code over {what}"

    def _code(self) -> Any:
        """The code mode, built on first use when the config asks for it (``None`` otherwise: the
        sandbox is never imported)."""
        if self._code_mode is None:
            settings = self._code_settings
            servers = {name: config.code_mode for name, config in self.servers.items()}
            if (settings is not None and settings.enabled) or any(servers.values()):
                from fastagent_cli.tools.code_mode.run_code import CodeMode

                self._code_mode = CodeMode(settings, servers, self._resource_reader)
        return self._code_mode

    def _resource_reader(self) -> Any:
        """The MCP servers' resources for code mode (``None`` when MCP cannot run here)."""
        source = self._open_source()
        return source.resources if source is not None else None

    def catalog(self) -> Mapping[str, Tool]:
        """Every registered tool by name (what ``search_tools`` searches)."""
        return self._table

    def mounted(self) -> list[Tool]:
        return list(self._table.values())

    def diagnostics(self) -> list[str]:
        found = list(self._problems)
        if self._source is not None:
            found += [str(d) for d in self._source.diagnostics()]
        if self._code_mode is not None:
            found += self._code_mode.diagnostics()
        return found

    def _open_source(self) -> Any:
        if self._source is None and not self._unavailable:
            try:
                from fastagent_cli.tools.mcp import McpToolSource
            except ImportError as exc:  # absent from this build, or the mcp SDK is not installed
                if str(exc.name).split(".")[0] != "mcp" and exc.name != "fastagent_cli.tools.mcp":
                    raise
                self._unavailable = True
                self._problems.append(f"MCP servers are configured but MCP support is unavailable ({exc})")
                return None
            self._source = McpToolSource(self.servers, self.cwd, tokens=self.mcp_tokens)
        return self._source

    async def mcp_tools(self) -> list[Tool]:
        """The MCP servers' tools (starting them on first use); ``[]`` when they cannot run."""
        if not self.servers:
            return []
        async with self._lock:
            source = self._open_source()
            if source is None:
                return []
            try:
                return list(await source.tools())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a server problem is a diagnostic, never a failed turn
                problem = f"MCP tools unavailable: {one_line(str(exc) or type(exc).__name__, 300)}"
                if problem not in self._problems:
                    self._problems.append(problem)
                    log.warning("[fastagent] %s", problem)
                return []

    async def start_watches(self, deliver: Callable[[Notice], None], state_path: Path) -> list[Notice]:
        """Watch the MCP resources ``[mcp_servers.<name>] watch`` names (starting their servers);
        updates go to ``deliver``; returns the notices queued at startup."""
        async with self._lock:
            source = self._open_source()
        if source is None:
            return []
        queued: list[Notice] = await source.start_watches(deliver, state_path)
        return queued

    async def refresh(self) -> None:
        """Mount the MCP tools into the table (a no-op without MCP servers)."""
        if not self.servers:
            return
        for tool in await self.mcp_tools():
            if tool.name in self._table and tool.name not in self._mcp_names:
                if not any(c.name == tool.name for c in self.collisions):
                    source = self._table[tool.name].source
                    winner = "coding tool" if source == "coding" else source or "a static tool"
                    collision = ToolCollision(tool.name, tool.source or "mcp", winner)
                    self.collisions.append(collision)
                    log.warning("[fastagent] %s", collision.message)
                continue
            self._table[tool.name] = tool
            self._mcp_names.add(tool.name)

    async def aclose(self) -> None:
        code_mode = self._code_mode
        if code_mode is not None:
            await code_mode.aclose()
        source, self._source = self._source, None
        if source is not None:
            self._problems += [str(d) for d in source.diagnostics() if str(d) not in self._problems]
            await source.aclose()
