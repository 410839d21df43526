"""The bearer tokens a running agent sends to a remote MCP server
(:class:`~fastagent_cli.tools.mcp_auth.McpTokens`).

They are read from the agent's ``auth.json`` (``mcp:<name>``, written by ``fastagent login
mcp:<name>``) on every request, so a login or a renewal by another process is used at once.
Renewal follows the provider logins' rule (:mod:`fastagent_cli.auth.oauth.resolver`): under the
file's lock, re-read first; if another process renewed meanwhile (the stored token is no longer
the one that expired or was refused), use its token and send nothing; else one refresh grant,
written back before the lock is released, in a task of its own so a cancelled turn cannot drop
tokens the server already rotated. A refused grant (``invalid_grant``: a revoked or spent refresh
token) is :class:`~fastagent_cli.tools.mcp_auth.LoginRequired`, and that refresh token is not sent
again by this process; an authorization server that cannot
be reached is a passing :class:`~fastagent_cli.tools.mcp_auth.McpAuthError`. The stored login is
left as it was in both cases.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fastagent_cli.auth.mcp import entry_key
from fastagent_cli.auth.mcp.client import refresh
from fastagent_cli.auth.oauth.common import TokenError, now_ms
from fastagent_cli.auth.store import AuthStore
from fastagent_cli.errors import CredentialError
from fastagent_cli.models.credentials import read_auth_file
from fastagent_cli.tools.mcp_auth import LoginRequired, McpAuthError
from fastagent_cli.tools.mcp_config import McpServerConfig

__all__ = ["RENEW_LOCK_TIMEOUT_S", "StoredTokens"]

RENEW_LOCK_TIMEOUT_S = 60.0


def _expired(entry: dict[str, Any]) -> bool:
    expires = entry.get("expires")
    return isinstance(expires, int | float) and now_ms() >= expires


class StoredTokens:
    def __init__(self, auth_path: Path, server: str, config: McpServerConfig) -> None:
        self.path = auth_path
        self.server = server
        self.url = config.url
        self.key = entry_key(server)
        self._refused: tuple[str, LoginRequired] | None = None
        """The refresh token the server refused, and what that meant: it is not sent again."""
        self._read: tuple[tuple[int, int, int], dict[str, Any]] | None = None
        """The file's identity (inode, size, mtime) when last read, and what it held."""

    async def _doc(self) -> dict[str, Any]:
        """``auth.json`` as it is now: a stat per request, read (off the loop) only when it changed
        (a login, a renewal here or in another process: each replaces the file)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._read = None
            return {}
        except OSError as exc:
            raise CredentialError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        ident = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._read is None or self._read[0] != ident:
            self._read = (ident, await asyncio.to_thread(read_auth_file, self.path))
        return self._read[1]

    def _entry(self, doc: dict[str, Any]) -> dict[str, Any] | None:
        """This server's login, or ``None``; LoginRequired when it is for another URL."""
        entry = doc.get(self.key)
        if not isinstance(entry, dict) or not isinstance(entry.get("access"), str):
            return None
        if entry.get("url") != self.url:
            raise LoginRequired(self.server, f"has a login for another URL ({entry.get('url')})")
        return entry

    async def access(self) -> str | None:
        try:
            entry = self._entry(await self._doc())
        except CredentialError as exc:
            raise McpAuthError(self.server, f"cannot read its login: {exc.message}") from None
        if entry is None:
            return None
        if _expired(entry):
            return await self.renew(str(entry["access"]))
        return str(entry["access"])

    async def renew(self, rejected: str) -> str:
        return await asyncio.shield(asyncio.ensure_future(self._renew(rejected)))

    async def _renew(self, rejected: str) -> str:
        async def change(doc: dict[str, Any]) -> tuple[str, bool]:
            entry = self._entry(doc)
            if entry is None:
                raise LoginRequired(self.server, "needs a login")
            if entry["access"] != rejected and not _expired(entry):
                return str(entry["access"]), False  # renewed by another process while this one waited
            if not entry.get("refresh"):
                raise LoginRequired(
                    self.server, "has a login that expired and cannot be renewed (no refresh token)"
                )
            if self._refused is not None and self._refused[0] == entry["refresh"]:
                raise self._refused[1]
            try:
                fresh = await refresh(entry)
            except TokenError as exc:
                if exc.permanent:
                    final = LoginRequired(
                        self.server, f"has a login that expired and could not be renewed ({exc.detail})"
                    )
                    self._refused = (str(entry["refresh"]), final)
                    raise final from None
                raise McpAuthError(
                    self.server, f"could not renew its login, try again: {exc.message}"
                ) from None
            doc[self.key] = fresh
            return str(fresh["access"]), True

        try:
            token, _ = await AuthStore(self.path).update_async(
                change, write_if=lambda outcome: outcome[1], lock_timeout=RENEW_LOCK_TIMEOUT_S
            )
        except CredentialError as exc:
            raise McpAuthError(self.server, f"could not renew its login: {exc.message}") from None
        return token
