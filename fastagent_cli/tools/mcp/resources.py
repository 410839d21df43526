"""The MCP servers' resources as plain data: what code mode's ``list_resources`` and
``read_resource`` return.

A resource is listed as ``{"server", "uri", "name", "title", "description", "mimeType",
"size"}`` (absent fields left out). Reading gives the text of a resource with one text content,
else a list of its contents (``{"uri", "mimeType", "text"}``, or ``{"uri", "mimeType", "size"}``
for binary content, which does not enter the sandbox). Every failure is a
:class:`ResourceError` whose text says which server and what went wrong.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from typing import Any

import mcp_types

from fastagent_cli.tools.mcp.connection import ConnectionLost, StartFailure
from fastagent_cli.tools.mcp.convert import describe_error
from fastagent_cli.tools.mcp.server import McpServer
from mcp.shared.exceptions import MCPError

__all__ = ["McpResources", "ResourceError"]


class ResourceError(Exception):
    """A resource call that failed (the text is what the sandbox's RuntimeError says)."""


def _listed(server: str, resource: mcp_types.Resource) -> dict[str, Any]:
    row: dict[str, Any] = {"server": server, "uri": str(resource.uri), "name": resource.name}
    for key, value in (
        ("title", resource.title),
        ("description", resource.description),
        ("mimeType", resource.mime_type),
        ("size", resource.size),
    ):
        if value is not None:
            row[key] = value
    return row


def _contents(result: mcp_types.ReadResourceResult) -> Any:
    parts: list[dict[str, Any]] = []
    for item in result.contents:
        part: dict[str, Any] = {"uri": str(item.uri)}
        if item.mime_type:
            part["mimeType"] = item.mime_type
        if isinstance(item, mcp_types.TextResourceContents):
            part["text"] = item.text
        else:
            part["size"] = len(base64.b64decode(item.blob, validate=False)) if item.blob else 0
        parts.append(part)
    if len(parts) == 1 and "text" in parts[0]:
        return parts[0]["text"]
    return parts


class McpResources:
    """Resource listing and reading over the configured servers."""

    def __init__(self, servers: Sequence[McpServer]) -> None:
        self._servers = {s.name: s for s in servers}

    def _server(self, name: str) -> McpServer:
        server = self._servers.get(name)
        if server is None:
            known = ", ".join(self._servers) or "none"
            raise ResourceError(f"no MCP server named {name!r} (servers: {known})")
        return server

    async def _guard(self, server: McpServer, step: Any) -> Any:
        try:
            return await step
        except asyncio.CancelledError:
            raise
        except StartFailure as exc:
            raise ResourceError(f"MCP server {server.name} is not running: {exc}") from None
        except ConnectionLost as exc:
            raise ResourceError(str(exc)) from None
        except MCPError as exc:
            raise ResourceError(f"MCP server {server.name}: {exc.message or exc}") from None
        except Exception as exc:
            raise ResourceError(f"MCP server {server.name}: {describe_error(exc)}") from None

    async def listing(self, server: str | None = None) -> list[dict[str, Any]]:
        """The resources of ``server`` (or of every server: one that fails is an error)."""
        chosen = [self._server(server)] if server is not None else list(self._servers.values())
        found: list[dict[str, Any]] = []
        for each in chosen:
            resources = await self._guard(each, each.list_resources())
            found += [_listed(each.name, r) for r in resources]
        return found

    async def read(self, uri: str, server: str | None = None) -> Any:
        """The content of ``uri`` from ``server`` (or from the one server that lists it)."""
        if server is not None:
            chosen = self._server(server)
        elif len(self._servers) == 1:
            chosen = next(iter(self._servers.values()))
        else:
            owners = [s for s in self._servers.values() if any(r["uri"] == uri for r in await self._quiet(s))]
            if len(owners) != 1:
                names = ", ".join(self._servers)
                why = "no MCP server lists" if not owners else "more than one MCP server lists"
                raise ResourceError(
                    f'{why} {uri}: name it, read_resource(uri, server="...") (servers: {names})'
                )
            chosen = owners[0]
        result = await self._guard(chosen, chosen.read_resource(uri))
        return _contents(result)

    async def _quiet(self, server: McpServer) -> list[dict[str, Any]]:
        try:
            return await self.listing(server.name)
        except ResourceError:
            return []
