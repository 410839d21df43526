"""The test MCP server (``mcp_test_server.py``: the same tools and resource) served over HTTP:
``python mcp_http_server.py PORT [streamable-http|sse]`` listens on 127.0.0.1:PORT, at ``/mcp``
(streamable HTTP) or ``/sse`` (the legacy HTTP+SSE transport). Over HTTP it has one more tool,
``header``, which answers the value of a header of the request."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from mcp.server.mcpserver import Context
from mcp_test_server import app


@app.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one header of this HTTP request ('' when absent)."""
    headers = ctx.headers or {}
    return str({k.lower(): v for k, v in headers.items()}.get(name.lower(), ""))


if __name__ == "__main__":
    port = int(sys.argv[1])
    transport = sys.argv[2] if len(sys.argv) > 2 else "streamable-http"
    if transport == "sse":
        app.run("sse", host="127.0.0.1", port=port)
    else:
        app.run("streamable-http", host="127.0.0.1", port=port)
