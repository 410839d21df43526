"""One run of an MCP stdio server: the process, its session, and the task that owns them.

The SDK's ``stdio_client`` and ``Client`` are anyio context managers with task groups inside: they
must be entered and left by one task. A :class:`Connection` runs that task (the *owner*) for the
life of the process; callers in any task talk to it through a queue, and each call runs as a
child task of the owner, so cancelling a caller cancels just its call. The owner notices the
server's stdout closing (the process died) at once, leaves the session (which reaps the process)
and marks the connection dead; :class:`~fastagent_cli.tools.mcp.server.McpServer` then starts a
new one. The server's stderr is read line by line into the log and a short tail kept for
diagnostics.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import os
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import anyio
import anyio.abc
import mcp_types
from mcp_types import CONNECTION_CLOSED, Implementation

from fastagent_cli import telemetry
from fastagent_cli._version import __version__
from fastagent_cli.tools.mcp.convert import describe_error
from fastagent_cli.tools.mcp.subscriptions import Listener, listens, subscribe_each
from fastagent_cli.tools.mcp.transports import open_transport
from fastagent_cli.tools.mcp_config import McpServerConfig
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from fastagent_cli.tools.mcp.bearer import BearerAuth

__all__ = ["START_TIMEOUT_S", "Connection", "ConnectionLost", "StartFailure"]

log = logging.getLogger("fastagent.mcp")

START_TIMEOUT_S = 30.0
"""How long a server gets to start, answer the handshake and list its tools."""
_STDERR_TAIL = 20
_MAX_TOOL_PAGES = 100
_PING_TIMEOUT_S = 2.0


class StartFailure(Exception):
    """The server could not be started (the message says why, in one line)."""


class ConnectionLost(Exception):
    """The server process is gone. ``sent`` says whether the call may have reached it."""

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


T = TypeVar("T")


@dataclass(slots=True)
class _Call:
    run: Callable[[Client], Awaitable[Any]]
    future: asyncio.Future[Any]
    scope: anyio.CancelScope | None = None
    context: contextvars.Context | None = None
    """The caller's context while telemetry is on: the call's task runs in it, so the SDK's request
    (and the ``traceparent`` :mod:`.transports` adds) belongs to the caller's ``execute_tool`` span."""


_STOP = object()
_EOF = object()


def _settle(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
        future.exception()  # marked retrieved: nobody may be waiting any more


class Connection:
    """One server process. Create, :meth:`start`, then :meth:`ready` / :meth:`call` /
    :meth:`aclose`; once :attr:`alive` is false it never comes back."""

    def __init__(
        self,
        name: str,
        params: StdioServerParameters | McpServerConfig,
        *,
        subscriptions: Sequence[str] = (),
        on_updated: Callable[[str], None] | None = None,
        auth: BearerAuth | None = None,
    ) -> None:
        self.name = name
        self.params = params
        self.auth = auth
        if auth is not None:
            auth.problem = None  # a new connection: an old refusal says nothing about it
        self.subscriptions = tuple(subscriptions)
        """Resources to watch once the server runs (on either wire, see :mod:`.subscriptions`)."""
        self.subscribe_errors: dict[str, str] = {}
        self._on_updated = on_updated
        self._listener: Listener | None = None
        self.protocol_version: str | None = None
        """The protocol revision the handshake settled on."""
        self._listen_scope = anyio.CancelScope()
        self.alive = True
        self.stderr_tail: deque[str] = deque(maxlen=_STDERR_TAIL)
        loop = asyncio.get_running_loop()
        self._ready: asyncio.Future[list[mcp_types.Tool]] = loop.create_future()
        self._queue: asyncio.Queue[_Call | object] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._stopping = False
        self._active = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._own(), name=f"fastagent-mcp-{self.name}")

    async def ready(self) -> list[mcp_types.Tool]:
        """The server's tools once it runs; :class:`StartFailure` when it cannot start."""
        return await asyncio.shield(self._ready)

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        return await self.request(lambda client: client.call_tool(tool, arguments))

    async def list_resources(self, cursor: str | None) -> mcp_types.ListResourcesResult:
        return await self.request(lambda client: client.list_resources(cursor=cursor, cache_mode="bypass"))

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        return await self.request(lambda client: client.read_resource(uri, cache_mode="bypass"))

    async def watch(self, uris: Sequence[str]) -> None:
        """Watch ``uris`` (beside what is watched already); refusals land in :attr:`subscribe_errors`."""
        await self.ready()
        wanted = tuple(dict.fromkeys((*self.subscriptions, *uris)))
        self.subscriptions = wanted
        listener = self._listener
        if listener is not None:
            listener.change(wanted)
            await listener.acknowledged()
            self.subscribe_errors.update(listener.errors)
            return
        await self.request(lambda client: subscribe_each(client, uris, self.subscribe_errors, self.name))

    async def request(self, run: Callable[[Client], Awaitable[T]]) -> T:
        """Run ``run(client)`` in the owner task (see the module doc); ConnectionLost when the
        server is gone."""
        await self.ready()
        if not self.alive:
            raise ConnectionLost(f"MCP server {self.name} is not running", sent=False)
        context = contextvars.copy_context() if telemetry.enabled() else None
        call = _Call(run, asyncio.get_running_loop().create_future(), context=context)
        call.future.add_done_callback(lambda f: call.scope.cancel() if f.cancelled() and call.scope else None)
        self._queue.put_nowait(call)
        result: T = await call.future
        return result

    async def aclose(self) -> None:
        """Stop the server (stdin closed, then SIGTERM/SIGKILL to its process group by the SDK)."""
        self._stopping = True
        task = self._task
        if task is None or task.done():
            return
        if self._ready.done() and self._scope is not None:
            self._queue.put_nowait(_STOP)
        elif self._scope is not None:
            self._scope.cancel()
        else:
            task.cancel()
        await asyncio.wait({task})

    # --- the owner task -----------------------------------------------------------------------

    async def _own(self) -> None:
        try:
            read_fd, write_fd = os.pipe()
        except OSError as exc:
            self._finish(exc)
            return
        errlog = os.fdopen(write_fd, "w")
        stderr_done = anyio.Event()
        failure: BaseException | None = None
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                scope.deadline = anyio.current_time() + START_TIMEOUT_S
                async with anyio.create_task_group() as group:
                    group.start_soon(self._pump_stderr, read_fd, stderr_done)
                    try:
                        await self._session(errlog, scope)
                    except Exception as exc:
                        failure = exc
                    finally:
                        errlog.close()
                        with anyio.move_on_after(0.5, shield=True):
                            await stderr_done.wait()
                        group.cancel_scope.cancel()
            if scope.cancelled_caught and not self._ready.done() and not self._stopping:
                failure = TimeoutError(f"no answer within {START_TIMEOUT_S:g} s")
        finally:
            if not errlog.closed:
                errlog.close()
            self._finish(failure)

    async def _session(self, errlog: TextIO, scope: anyio.CancelScope) -> None:
        transport = open_transport(self.params, errlog, self._on_eof, self.auth)
        info = Implementation(name="fastagent", version=__version__)
        client = Client(
            transport, mode="auto", cache=None, client_info=info, message_handler=self._on_message
        )
        async with client:
            errlog.close()  # the server holds its own copy; ours would keep the pipe open
            tools: list[mcp_types.Tool] = []
            cursor: str | None = None
            for _ in range(_MAX_TOOL_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            self.protocol_version = client.protocol_version
            async with anyio.create_task_group() as group:
                if listens(client):
                    listener = self._listener = Listener(self.name, self._on_updated)
                    group.start_soon(self._listen, listener, client)
                    if self.subscriptions:
                        listener.change(self.subscriptions)
                        await listener.acknowledged()
                        self.subscribe_errors.update(listener.errors)
                elif self.subscriptions:
                    await subscribe_each(client, self.subscriptions, self.subscribe_errors, self.name)
                scope.deadline = math.inf
                self._ready.set_result(tools)
                await self._serve(client, group)

    async def _serve(self, client: Client, group: anyio.abc.TaskGroup) -> None:
        while True:
            item = await self._queue.get()
            if item is _STOP:
                group.cancel_scope.cancel()
                return
            if item is _EOF:
                self._listen_scope.cancel()  # calls in flight end with "connection closed" on their own
                return
            if isinstance(item, _Call):
                if item.context is not None:  # the task copies the context it is started in
                    item.context.run(group.start_soon, self._call, client, item)
                else:
                    group.start_soon(self._call, client, item)

    async def _listen(self, listener: Listener, client: Client) -> None:
        with self._listen_scope:
            await listener.run(client)

    async def _call(self, client: Client, call: _Call) -> None:
        if call.future.done():
            return
        try:
            with anyio.CancelScope() as scope:
                call.scope = scope
                if self._active == 0 and not await self._answers_ping(client):
                    lost = ConnectionLost(f"MCP server {self.name} is not running", sent=False)
                    _settle(call.future, lost)
                    return
                self._active += 1
                try:
                    result = await call.run(client)
                finally:
                    self._active -= 1
                if not call.future.done():
                    call.future.set_result(result)
        except MCPError as exc:
            if self.auth is not None and self.auth.problem is not None:
                _settle(call.future, self.auth.problem)  # a 401 the login could not answer
            elif exc.message == "Session terminated" and isinstance(self.params, McpServerConfig):
                # a remote server that restarted no longer knows the session: it did not run the call
                self._on_eof()
                _settle(call.future, ConnectionLost(f"MCP server {self.name} ended the session", sent=False))
            elif exc.code == CONNECTION_CLOSED:
                _settle(
                    call.future, ConnectionLost(f"MCP server {self.name} exited during the call", sent=True)
                )
            else:
                _settle(call.future, exc)
        except Exception as exc:
            _settle(call.future, exc)
        finally:  # also when the owner cancels the call (shutdown)
            why = "was stopped" if self._stopping else "was lost during the call"
            _settle(call.future, ConnectionLost(f"the connection to MCP server {self.name} {why}", sent=True))

    async def _answers_ping(self, client: Client) -> bool:
        """Whether an idle server is still there, so a call never goes to a server that died
        since its last answer (that call could not be safely repeated). A server that is slow to
        answer, or does not know ``ping``, counts as there."""
        with anyio.move_on_after(_PING_TIMEOUT_S):
            try:
                await client.session.send_ping()  # Client.send_ping warns; legacy mode has ping
            except MCPError as exc:
                return exc.code != CONNECTION_CLOSED
        return True

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification) and self._on_updated is not None:
            self._on_updated(message.params.uri)

    def _on_eof(self) -> None:
        if self.alive:
            self.alive = False
            if not self._stopping:
                log.info("[mcp] server %s exited", self.name)
            self._queue.put_nowait(_EOF)

    def _finish(self, failure: BaseException | None) -> None:
        self.alive = False
        if not self._ready.done():
            if self._stopping and failure is None:
                reason = "shut down before it started"
            elif failure is None:
                reason = "exited during start-up"
            elif self.auth is not None and self.auth.problem is not None:
                reason = self.auth.problem.detail
            else:
                reason = describe_error(failure, self.params.command)
                if isinstance(self.params, McpServerConfig):
                    reason = f"cannot reach {self.params.url}: {reason}"
            _settle(self._ready, StartFailure(f"{reason}{self._stderr_note()}"))
        elif failure is not None and not self._stopping:
            log.warning("[mcp] server %s failed: %s", self.name, describe_error(failure))
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, _Call):
                _settle(item.future, ConnectionLost(f"MCP server {self.name} is not running", sent=False))

    def _stderr_note(self) -> str:
        last = next((line for line in reversed(self.stderr_tail) if line.strip()), "")
        return f" (stderr: {last.strip()[:300]})" if last else ""

    async def _pump_stderr(self, fd: int, done: anyio.Event) -> None:
        pending = b""
        try:
            os.set_blocking(fd, False)
            while True:
                await anyio.wait_readable(fd)
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not data:
                    break
                *lines, pending = (pending + data).split(b"\n")
                for line in lines:
                    self._stderr_line(line)
                if len(pending) > 65536:
                    self._stderr_line(pending)
                    pending = b""
        finally:
            if pending:
                self._stderr_line(pending)
            os.close(fd)
            done.set()

    def _stderr_line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        self.stderr_tail.append(text)
        log.debug("[mcp:%s] %s", self.name, text)
