"""An MCP server behind OAuth, built on the ``mcp`` SDK's resource-server support:
``python mcp_oauth_server.py PORT AS_ORIGIN [streamable-http|sse]`` listens on 127.0.0.1:PORT
(``/mcp``, or ``/sse`` for the legacy transport), answers 401 with a ``resource_metadata``
challenge to a request without a valid bearer token, publishes its protected-resource metadata
naming AS_ORIGIN, and checks each token by asking AS_ORIGIN's introspection endpoint (RFC 7662);
a token issued for another resource is refused."""

from __future__ import annotations

import sys
import warnings

import httpx
from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings


class Introspection:
    """A TokenVerifier that asks the authorization server."""

    def __init__(self, origin: str) -> None:
        self.url = f"{origin}/introspect"

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx.AsyncClient(timeout=10) as client:
            answer = (await client.post(self.url, data={"token": token})).json()
        if not answer.get("active"):
            return None
        return AccessToken(
            token=token,
            client_id=answer["client_id"],
            scopes=answer.get("scope", "").split(),
            expires_at=answer.get("exp"),
            resource=answer.get("aud"),
        )


def build(port: int, issuer: str, transport: str) -> MCPServer:
    path = "/sse" if transport == "sse" else "/mcp"
    resource = f"http://127.0.0.1:{port}" if transport == "sse" else f"http://127.0.0.1:{port}{path}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auth = AuthSettings(
            issuer_url=issuer,
            resource_server_url=resource,
            required_scopes=["mcp:tools"],
            validate_token_resource=True,
        )
    app = MCPServer("fastagent-oauth-test", token_verifier=Introspection(issuer), auth=auth)

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return app


if __name__ == "__main__":
    port, issuer = int(sys.argv[1]), sys.argv[2]
    transport = sys.argv[3] if len(sys.argv) > 3 else "streamable-http"
    server = build(port, issuer, transport)
    if transport == "sse":
        server.run("sse", host="127.0.0.1", port=port)
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)
