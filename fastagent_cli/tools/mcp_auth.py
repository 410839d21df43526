"""What an MCP connection needs of OAuth: a source of bearer tokens for one server.

The tokens live in the agent's ``auth.json`` (written by ``fastagent login mcp:<name>``); the
source that reads and renews them belongs to the credential store (outer layer) and is handed in
by the assembly as a :data:`TokenFactory`. This module imports neither that store nor the ``mcp``
SDK. A served agent never runs an interactive login: a missing login, or one that cannot be
renewed, is a :class:`LoginRequired` whose message names the command to run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from fastagent_cli.tools.mcp_config import McpServerConfig

__all__ = ["LoginRequired", "McpAuthError", "McpTokens", "TokenFactory", "login_command", "parse_challenge"]

_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


def parse_challenge(header: str) -> dict[str, str] | None:
    """The parameters of a ``WWW-Authenticate: Bearer ...`` challenge (``None`` when it is not one)."""
    scheme, _, rest = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return {
        m.group(1).lower(): (m.group(2) or m.group(3) or "").replace('\\"', '"')
        for m in _PARAM.finditer(rest)
    }


def login_command(server: str) -> str:
    return f"fastagent login mcp:{server}"


class McpAuthError(Exception):
    """The server's tokens could not be had right now: ``MCP server <name> <detail>``."""

    def __init__(self, server: str, detail: str) -> None:
        super().__init__(f"MCP server {server} {detail}")
        self.server = server
        self.detail = detail


class LoginRequired(McpAuthError):
    """No usable login: none stored, or it expired and cannot be renewed. The message ends with
    ``run 'fastagent login mcp:<name>'``."""

    def __init__(self, server: str, why: str) -> None:
        super().__init__(server, f"{why}: run '{login_command(server)}'")


class McpTokens(Protocol):
    """The bearer tokens of one server."""

    async def access(self) -> str | None:
        """A current access token (renewed first when it is about to expire); ``None`` when no
        login is stored. Raises :class:`McpAuthError` when a due renewal fails."""

    async def renew(self, rejected: str) -> str:
        """The server refused ``rejected``: a renewed token (or one another process renewed
        meanwhile). Raises :class:`McpAuthError` (:class:`LoginRequired` when it is final)."""


TokenFactory = Callable[[str, McpServerConfig], McpTokens | None]
"""``(server name, config) -> tokens`` (``None``: this server gets no OAuth)."""
