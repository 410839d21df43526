"""How a connection reaches its server: a child process over stdio, or a URL over streamable
HTTP (or the legacy HTTP+SSE transport).

Each transport yields the SDK's read and write streams, with the read stream watched so the
connection hears at once when it ends: the server process exited, or a remote server's stream
closed. A remote server's headers are resolved (``$VAR``) when connecting, so a changed
environment variable is used by the next connection. A server logged in with ``fastagent login
mcp:<name>`` gets its bearer token from ``auth`` (see :mod:`.bearer`). While telemetry is on, each
HTTP request carries the W3C ``traceparent`` of the span it is made in (a tool call's
``execute_tool``: the SDK posts a message in its sender's context, and
:class:`~.connection.Connection` runs a call in its caller's).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from fastagent_cli import telemetry
from fastagent_cli.tools.mcp_config import McpServerConfig, resolve_headers
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    import httpx2

    from fastagent_cli.tools.mcp.bearer import BearerAuth

__all__ = ["SSE_READ_TIMEOUT_S", "open_transport"]

SSE_READ_TIMEOUT_S = 300.0
"""How long a remote server's event stream may stay silent before it counts as gone."""


class _EofWatch:
    """The transport's read stream, reporting when it ends (the server closed stdout or died)."""

    def __init__(self, inner: Any, on_eof: Callable[[], None]) -> None:
        self._inner = inner
        self._on_eof = on_eof

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_eof()
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _EofWatch:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _EofWatch:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def _watched_stdio(
    params: StdioServerParameters, errlog: TextIO, on_eof: Callable[[], None]
) -> AsyncIterator[tuple[Any, Any]]:
    async with stdio_client(params, errlog=errlog) as (read_stream, write_stream):
        yield _EofWatch(read_stream, on_eof), write_stream


def _not_a_refusal(record: logging.LogRecord) -> bool:
    """Drop the SDK's traceback for a POST the server refused with 401 (the legacy SSE transport
    logs it and ends the session): :mod:`.bearer` has recorded why, and the call says it."""
    error = record.exc_info[1] if record.exc_info else None
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None) != 401


async def _add_traceparent(request: httpx2.Request) -> None:
    """An ``httpx`` request hook: the current span's ``traceparent`` (none while telemetry is off)."""
    parent = telemetry.traceparent()
    if parent is not None:
        request.headers["traceparent"] = parent


def _traced_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """The SDK's HTTP client (its timeouts and redirect rule) with :func:`_add_traceparent`."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
    http.event_hooks = {**http.event_hooks, "request": [*http.event_hooks["request"], _add_traceparent]}
    return http


@asynccontextmanager
async def _remote(
    config: McpServerConfig, on_eof: Callable[[], None], auth: BearerAuth | None
) -> AsyncIterator[tuple[Any, Any]]:
    import httpx2

    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    url = config.url
    assert url is not None
    headers = resolve_headers(config.headers)  # the server checked them before connecting
    if config.transport == "sse":
        if auth is not None:
            sse_log = logging.getLogger("mcp.client.sse")
            if _not_a_refusal not in sse_log.filters:
                sse_log.addFilter(_not_a_refusal)
        async with sse_client(
            url,
            headers=headers,
            timeout=config.timeout,
            sse_read_timeout=SSE_READ_TIMEOUT_S,
            auth=auth,
            httpx_client_factory=_traced_client,
        ) as (read_stream, write_stream):
            yield _EofWatch(read_stream, on_eof), write_stream
        return
    timeout = httpx2.Timeout(config.timeout, read=max(config.timeout, SSE_READ_TIMEOUT_S))
    async with (
        _traced_client(headers=headers, timeout=timeout, auth=auth) as http,
        streamable_http_client(url, http_client=http) as (read_stream, write_stream),
    ):
        yield _EofWatch(read_stream, on_eof), write_stream


def open_transport(
    target: StdioServerParameters | McpServerConfig,
    errlog: TextIO,
    on_eof: Callable[[], None],
    auth: BearerAuth | None = None,
) -> Any:
    """The transport context manager for ``target`` (a command's parameters or a remote config)."""
    if isinstance(target, McpServerConfig):
        return _remote(target, on_eof, auth)
    return _watched_stdio(target, errlog, on_eof)
