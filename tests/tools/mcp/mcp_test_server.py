"""A small MCP stdio server for the tests, built with the ``mcp`` SDK (``MCPServer``, the 2.x
name of FastMCP). Run as ``python mcp_test_server.py [--fail-at-start]``."""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("fastagent-test")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def whoami() -> str:
    """The server's process id and working directory, and the GREETING variable."""
    return f"pid={os.getpid()} cwd={os.getcwd()} greeting={os.environ.get('GREETING', '')}"


@app.tool()
def refuse(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@app.tool()
async def nap(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "rested"


@app.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


if __name__ == "__main__":
    if "--fail-at-start" in sys.argv:
        print("boom: this server refuses to start", file=sys.stderr, flush=True)
        sys.exit(2)
    app.run()
