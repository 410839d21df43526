"""One configured MCP server across its runs: started on first use, restarted when it died."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types

from fastagent_cli.tools.base import ToolResult, text_result
from fastagent_cli.tools.mcp.bearer import BearerAuth
from fastagent_cli.tools.mcp.connection import Connection, ConnectionLost, StartFailure
from fastagent_cli.tools.mcp.convert import describe_error, tool_result
from fastagent_cli.tools.mcp_auth import McpAuthError, TokenFactory
from fastagent_cli.tools.mcp_config import McpServerConfig, resolve_headers
from mcp import StdioServerParameters
from mcp.shared.exceptions import MCPError

__all__ = ["BACKOFF_S", "McpServer"]

BACKOFF_S = (1.0, 60.0)
"""A remote server that cannot be reached is tried again after 1 s, then twice as long each
time, up to 60 s; calls meanwhile fail at once with the reason."""

log = logging.getLogger("fastagent.mcp")


class McpServer:
    """``[mcp_servers.<name>]``: the tool listing, calls, restarts and the last start failure."""

    def __init__(
        self, name: str, config: McpServerConfig, cwd: Path, tokens: TokenFactory | None = None
    ) -> None:
        self.name = name
        self.config = config
        self.params: StdioServerParameters | McpServerConfig = config
        self.auth: BearerAuth | None = None
        """OAuth bearer tokens (a url server without its own ``Authorization`` header)."""
        own_auth = any(key.lower() == "authorization" for key in config.headers)
        if config.remote and tokens is not None and not own_auth:
            source = tokens(name, config)
            self.auth = BearerAuth(name, source) if source is not None else None
        self._auth_logged: str | None = None
        if config.command is not None:
            workdir = Path(config.cwd).expanduser() if config.cwd else cwd
            if not workdir.is_absolute():
                workdir = cwd / workdir
            self.params = StdioServerParameters(
                command=config.command, args=list(config.args), env=dict(config.env) or None, cwd=str(workdir)
            )
        self.tools: list[mcp_types.Tool] | None = None
        self.error: str | None = None
        self.failed_at: float | None = None
        self.starts = 0
        self.watch = list(config.watch)
        self._on_updated: Callable[[str], None] | None = None
        self._connection: Connection | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._backoff = BACKOFF_S[0]

    def _failed(self, exc: StartFailure) -> None:
        """Record a failed start; a remote server is then tried again after a growing pause."""
        if "trying again in" in str(exc):
            return  # the backoff's own answer, not a new attempt
        self.error = str(exc)
        loop = asyncio.get_running_loop()
        if self.config.remote and self.failed_at is not None:
            self._backoff = min(self._backoff * 2, BACKOFF_S[1])
        self.failed_at = loop.time()
        if self.auth is not None and self.auth.problem is not None:
            self._log_auth(self.auth.problem)
            return
        log.warning(
            "[mcp] server %s %s: %s",
            self.name,
            "unreachable" if self.config.remote else "cannot start",
            self.error,
        )

    async def _current(self) -> Connection:
        """The running connection, or a new one when there is none or it died."""
        async with self._lock:
            if self._closed:
                raise StartFailure("shut down")
            connection = self._connection
            if connection is not None and connection.alive:
                return connection
            if connection is not None:
                await connection.aclose()  # it is exiting already; this waits for the reaping
                log.info(
                    "[mcp] %s server %s", "reconnecting to" if self.config.remote else "restarting", self.name
                )
            if self.config.remote:
                self._check_reachable()
            watching = self._on_updated is not None
            connection = Connection(
                self.name,
                self.params,
                subscriptions=self.watch if watching else (),
                on_updated=self._updated,
                auth=self.auth,
            )
            connection.start()
            self.starts += 1
            self._connection = connection
            return connection

    def _check_reachable(self) -> None:
        """A remote server's headers resolve, and its backoff after a failed connect is over;
        StartFailure saying why not (a call fails at once, never waits for the backoff)."""
        try:
            resolve_headers(self.config.headers)
        except ValueError as exc:
            raise StartFailure(f"{exc} (set it in the environment or .env)") from None
        if self.failed_at is not None:
            left = self.failed_at + self._backoff - asyncio.get_running_loop().time()
            if left > 0:
                raise StartFailure(f"{self.error or 'unreachable'}; trying again in {math.ceil(left)} s")

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Start the server if needed and return its tools; :class:`StartFailure` if it cannot."""
        try:
            connection = await self._current()
            tools = await connection.ready()
        except StartFailure as exc:
            self._failed(exc)
            raise
        self.tools, self.error, self.failed_at, self._backoff = tools, None, None, BACKOFF_S[0]
        return tools

    def _updated(self, uri: str) -> None:
        if self._on_updated is not None:
            self._on_updated(uri)

    async def start_watching(self, on_updated: Callable[[str], None]) -> dict[str, str]:
        """Subscribe to the ``watch`` resources (now, and on every restart); ``on_updated(uri)``
        hears each ``notifications/resources/updated``. Returns the URIs that could not be
        subscribed, with why; StartFailure when the server cannot start."""
        self._on_updated = on_updated
        connection = await self._current()
        await connection.ready()
        if not connection.subscriptions:  # started before watching began (a turn used it)
            try:
                await connection.watch(self.watch)
            except MCPError as exc:
                for uri in self.watch:
                    connection.subscribe_errors[uri] = exc.message or str(exc)
        return dict(connection.subscribe_errors)

    async def list_resources(self, limit: int = 1000) -> list[mcp_types.Resource]:
        """``resources/list``, every page (up to ``limit`` resources); raises what failed."""
        connection = await self._current()
        found: list[mcp_types.Resource] = []
        cursor: str | None = None
        while len(found) < limit:
            page = await connection.list_resources(cursor)
            found += page.resources
            cursor = page.next_cursor
            if not cursor:
                break
        return found[:limit]

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        """``resources/read``; raises what failed (StartFailure, ConnectionLost, MCPError)."""
        connection = await self._current()
        return await connection.read_resource(uri)

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call ``tool``; every failure is an error result. A server found dead before the call
        is restarted once and the call retried; one that dies during the call is restarted on
        the next call (the call itself is not repeated: it may have had effects)."""
        for attempt in (1, 2):
            try:
                connection = await self._current()
                result = await connection.call(tool, arguments)
            except StartFailure as exc:
                self._failed(exc)
                if (refused := self._refused()) is not None:
                    return refused
                state = "is not reachable" if self.config.remote else "is not running"
                return text_result(f"MCP server {self.name} {state}: {exc}", is_error=True)
            except ConnectionLost as exc:
                if (refused := self._refused()) is not None:
                    return refused  # the legacy SSE transport ends the session on a refused POST
                if not exc.sent and attempt == 1:
                    continue
                again = "reconnected" if self.config.remote else "restarted"
                later = "" if self._closed else f"; it will be {again} on the next call"
                return text_result(f"{exc}{later}", is_error=True)
            except McpAuthError as exc:
                self._log_auth(exc)
                return text_result(str(exc), is_error=True)
            except MCPError as exc:
                return text_result(f"MCP server {self.name}: {exc.message or exc}", is_error=True)
            except Exception as exc:
                return text_result(f"MCP server {self.name}: {describe_error(exc)}", is_error=True)
            self._auth_logged = None  # answered: a later refusal is news again
            return tool_result(self.name, tool, result)
        return text_result(f"MCP server {self.name} is not running", is_error=True)

    def _refused(self) -> ToolResult | None:
        """The error result of a call the login could not authorize (``None`` if it was not that)."""
        problem = self.auth.problem if self.auth is not None else None
        if problem is None:
            return None
        self._log_auth(problem)
        return text_result(str(problem), is_error=True)

    def _log_auth(self, exc: McpAuthError) -> None:
        """One log line per new reason (not one per refused call)."""
        if str(exc) != self._auth_logged:
            self._auth_logged = str(exc)
            log.warning("[mcp] server %s %s", self.name, exc.detail)

    async def aclose(self) -> None:
        async with self._lock:
            self._closed = True
            connection, self._connection = self._connection, None
        if connection is not None:
            await connection.aclose()
