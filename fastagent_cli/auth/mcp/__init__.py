"""OAuth for remote MCP servers (the MCP authorization spec, 2025-06-18 and later).

* :mod:`.discovery`: the server's 401 challenge, its protected-resource metadata (RFC 9728) and
  its authorization server's metadata (RFC 8414 / OpenID Connect discovery);
* :mod:`.client`: dynamic client registration (RFC 7591), the authorization request with PKCE
  S256 and the ``resource`` indicator (RFC 8707), and the token endpoint's two grants;
* :mod:`.login`: ``fastagent login mcp:<name>``, with a loopback redirect;
* :mod:`.tokens`: the tokens an agent uses, renewed one process at a time.

The login is stored in the agent's ``auth.json`` under ``mcp:<name>``::

    {"type": "oauth", "kind": "mcp", "url": ..., "resource": ..., "issuer": ...,
     "token_endpoint": ..., "client": {"client_id": ..., ...}, "scope": ...,
     "access": ..., "refresh": ..., "expires": <epoch ms, or null>}
"""

from __future__ import annotations

__all__ = ["entry_key"]


def entry_key(server: str) -> str:
    """The ``auth.json`` key of a server's login."""
    return f"mcp:{server}"
