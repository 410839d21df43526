"""The MCP server face: ``/mcp`` on ``start`` / ``dev`` with ``[http] mcp = true`` (streamable
HTTP), and ``fastagent mcp [dir]`` (stdio). One tool, ``ask``; the skills as prompts; the sessions
as resources (stdio, and ``/mcp`` with ``session_control = true``).

The JSON-RPC wire is spoken here, on the host's aiohttp, not through the ``mcp`` SDK's server:
its streamable HTTP transport is an ASGI app with a task-group session manager of its own, which
would need an ASGI bridge inside aiohttp, its own body, auth and Host/Origin handling beside the
host's, and pydantic models plus starlette and anyio loaded at start-up; the server side of the
protocol for one tool is small (:mod:`.protocol`), and the SDK's own client checks it in the tests
over both transports.
"""

from __future__ import annotations

import shlex
from typing import BinaryIO, TextIO

from fastagent_cli.assembly import OpenedAgent
from fastagent_cli.serving.face_kit import identity_of
from fastagent_cli.serving.faces import Face, FaceContext
from fastagent_cli.serving.faces.mcp.http import MCP_KEY, create_mcp_handler
from fastagent_cli.serving.faces.mcp.protocol import McpConnection, McpServer
from fastagent_cli.serving.faces.mcp.stdio import serve_stdio

__all__ = ["MCP_KEY", "McpConnection", "McpServer", "create_face", "serve_opened", "serve_stdio"]


def create_face(ctx: FaceContext) -> Face:
    opened = ctx.opened
    sessions = opened.control.sessions if opened.session_control else None  # the plane's business
    server = McpServer(ctx.agent, identity_of(opened), sessions)
    name = ctx.opened.name

    def startup(base: str) -> list[str]:
        url = f"{base}{MCP_KEY}"
        auth = " --header 'Authorization: Bearer <token>'" if ctx.token is not None else ""
        return [
            f"mcp: {url} (streamable HTTP; claude mcp add --transport http {shlex.quote(name)} {url}{auth})"
        ]

    return Face("mcp", routes={MCP_KEY: create_mcp_handler(server, ctx.token, ctx.streams)}, startup=startup)


async def serve_opened(opened: OpenedAgent, stdin: BinaryIO, stdout: TextIO) -> None:
    """``fastagent mcp``: serve an opened agent on the two streams until stdin ends (its sessions
    as resources too: whoever launched the process owns them)."""
    server = McpServer(opened.agent, identity_of(opened), opened.control.sessions)
    await serve_stdio(McpConnection(server), stdin, stdout)
