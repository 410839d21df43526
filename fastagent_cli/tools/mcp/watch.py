"""MCP resource watches: ``[mcp_servers.<name>] watch = ["uri", ...]`` as notices.

While serving, each watched resource is subscribed (``resources/subscribe``, again after a server
restart). A ``notifications/resources/updated`` starts a debounce window
(``watch_debounce_ms``, 500 ms by default): updates of that resource inside it are one, and at
its end the resource is read. A content equal to the last one delivered is dropped
(deduplicated); otherwise it becomes a notice whose text names the resource and carries its
current content (text up to :data:`CONTENT_LIMIT` characters; binary content by size).

The digest of each resource's last content is kept in ``<state root>/watch-state.json``. At
startup every watched resource is read: one that changed since the last run gives a notice that
says so (queued at startup: the On Start turn folds it in); the first run only records.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import mcp_types

from fastagent_cli.control import Notice
from fastagent_cli.state.atomic import atomic_write_json, read_json
from fastagent_cli.tools.mcp.connection import StartFailure
from fastagent_cli.tools.mcp.convert import describe_error
from fastagent_cli.tools.mcp.server import McpServer

__all__ = ["CONTENT_LIMIT", "ResourceWatch", "resource_text"]

log = logging.getLogger("fastagent.mcp")

CONTENT_LIMIT = 16_000
"""Characters of a resource's text a notice carries (the rest is cut, with a note)."""


def resource_text(result: mcp_types.ReadResourceResult) -> tuple[str, str]:
    """What a notice says about a read resource, and the digest of its content."""
    digest = hashlib.sha256()
    parts: list[str] = []
    for item in result.contents:
        mime = item.mime_type or ("text/plain" if isinstance(item, mcp_types.TextResourceContents) else "")
        if isinstance(item, mcp_types.TextResourceContents):
            digest.update(b"t" + item.text.encode("utf-8", "surrogatepass"))
            text = item.text
            if len(text) > CONTENT_LIMIT:
                text = (
                    f"{text[:CONTENT_LIMIT]}\n[… {len(item.text) - CONTENT_LIMIT} more characters not shown]"
                )
            parts.append(f"({mime})\n{text}" if mime and mime != "text/plain" else text)
        else:
            digest.update(b"b" + item.blob.encode("ascii", "replace"))
            size = len(base64.b64decode(item.blob, validate=False)) if item.blob else 0
            parts.append(f"[binary content {mime or 'application/octet-stream'}, {size} bytes]")
    return "\n\n".join(parts) or "(empty)", digest.hexdigest()


def _notice(server: str, uri: str, text: str, *, since_last_run: bool) -> Notice:
    when = " while fastagent was not running" if since_last_run else ""
    return Notice(f"mcp:{server}", f"The resource {uri} (MCP server {server}) changed{when}. Now:\n{text}")


class ResourceWatch:
    """The watched resources of some MCP servers, turned into notices for ``deliver``."""

    def __init__(
        self,
        servers: Sequence[tuple[McpServer, float]],
        state_path: Path,
        deliver: Callable[[Notice], None],
    ) -> None:
        self._servers = [(s, debounce) for s, debounce in servers if s.watch]
        self._state_path = state_path
        self._deliver = deliver
        self._digests: dict[str, str] = {}
        self._pending: dict[str, asyncio.Task[None]] = {}
        self.problems: list[str] = []
        self.closed = False

    @staticmethod
    def _key(server: McpServer, uri: str) -> str:
        return f"{server.name} {uri}"

    async def start(self) -> list[Notice]:
        """Subscribe and read every watched resource; the notices for resources that changed
        since the last run."""
        self._digests = self._load()
        queued: list[Notice] = []
        for server, debounce in self._servers:
            try:
                refused = await server.start_watching(self._on_updated(server, debounce))
            except StartFailure as exc:
                self._problem(f'mcp server "{server.name}": cannot watch resources: {exc}')
                continue
            for uri in server.watch:
                if uri in refused:
                    self._problem(f'mcp server "{server.name}": cannot watch {uri}: {refused[uri]}')
                    continue
                read = await self._read(server, uri)
                if read is None:
                    continue
                text, digest = read
                key = self._key(server, uri)
                if key in self._digests and self._digests[key] != digest:
                    queued.append(_notice(server.name, uri, text, since_last_run=True))
                self._digests[key] = digest
        self._save()
        return queued

    def _on_updated(self, server: McpServer, debounce: float) -> Callable[[str], None]:
        def updated(uri: str) -> None:
            key = self._key(server, uri)
            if self.closed or key in self._pending:
                return  # inside the debounce window: this update is the one already coming
            self._pending[key] = asyncio.get_running_loop().create_task(self._settle(server, uri, debounce))

        return updated

    async def _settle(self, server: McpServer, uri: str, debounce: float) -> None:
        key = self._key(server, uri)
        try:
            await asyncio.sleep(debounce)
        finally:
            self._pending.pop(key, None)
        read = await self._read(server, uri)
        if read is None or self.closed:
            return
        text, digest = read
        if self._digests.get(key) == digest:
            log.debug("[mcp] %s: %s updated with the same content; no notice", server.name, uri)
            return
        self._digests[key] = digest
        self._save()
        self._deliver(_notice(server.name, uri, text, since_last_run=False))

    async def _read(self, server: McpServer, uri: str) -> tuple[str, str] | None:
        try:
            return resource_text(await server.read_resource(uri))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._problem(f'mcp server "{server.name}": cannot read {uri}: {describe_error(exc)}')
            return None

    def _problem(self, text: str) -> None:
        log.warning("[mcp] %s", text)
        if text not in self.problems:
            self.problems.append(text)

    def _load(self) -> dict[str, str]:
        try:
            raw: Any = read_json(self._state_path)
        except (OSError, ValueError):
            return {}
        if not isinstance(raw, dict):
            return {}
        digests = raw.get("digests", {})
        return {str(k): str(v) for k, v in digests.items()} if isinstance(digests, dict) else {}

    def _save(self) -> None:
        try:
            atomic_write_json(self._state_path, {"version": 1, "digests": self._digests})
        except OSError as exc:
            self._problem(f"cannot write {self._state_path}: {exc.strerror or exc}")

    async def aclose(self) -> None:
        self.closed = True
        tasks = list(self._pending.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
