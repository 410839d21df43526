"""``bash``: run a command in the workspace, as pi does.

``bash -c <command>`` (``/bin/bash``, else ``bash`` on PATH, else ``sh``) in a new session and
process group, stdin closed, stdout and stderr merged into one pipe (so arrival order is kept).
The output is tail-truncated (see :mod:`.bash_output`); while the command runs, its output tail is
reported as progress at most every :data:`PROGRESS_INTERVAL_S`. A non-zero exit is an error result. An
optional ``timeout`` (seconds) and the cancellation of the calling task both end the whole
process group: SIGTERM, then SIGKILL after a short grace, so nothing the command started is left
running. Nothing here blocks the event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

import pydantic

from fastagent_cli.contract import escape_lone_surrogates
from fastagent_cli.tools.base import Tool, ToolContext, ToolResult
from fastagent_cli.tools.coding._common import ToolFailure, failures_as_results, js_number, parse_args
from fastagent_cli.tools.coding.bash_output import BashOutput
from fastagent_cli.tools.coding.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES

__all__ = ["create_bash_tool", "session_environment"]

DESCRIPTION = (
    "Execute a bash command in the current working directory. Returns stdout and stderr. Output is "
    f"truncated to last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit "
    "first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds."
)
SNIPPET = "Execute bash commands (ls, grep, find, etc.)"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "Bash command to execute"},
        "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"},
    },
    "required": ["command"],
}

KILL_GRACE_S = 0.5
"""How long the process group gets between SIGTERM and SIGKILL."""
DRAIN_S = 0.5
"""How long to wait for the rest of the output once the shell has exited (a background job
may hold the pipe open; its later output is not waited for)."""
PROGRESS_INTERVAL_S = 0.25
PROGRESS_CHARS = 2000
"""How much of the output's tail a progress report carries."""
_FLOW_HIGH = 1024 * 1024
_FLOW_LOW = 256 * 1024
_cleanups: set[asyncio.Task[None]] = set()


class BashArgs(pydantic.BaseModel):
    command: str
    timeout: float | None = None


def _shell() -> str:
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    return shutil.which("bash") or "sh"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def session_environment(ctx: ToolContext) -> dict[str, str | None]:
    """``PI_SESSION_ID`` (and ``PI_SESSION_ID_ENCODING``) for the command; ``None`` unsets.

    An id an environment variable cannot carry (a NUL or a lone surrogate) is exported as its
    JSON string form with ``PI_SESSION_ID_ENCODING=json``.
    """
    if ctx.session is None:
        return {"PI_SESSION_ID": None, "PI_SESSION_ID_ENCODING": None}
    raw = ctx.session.get_session_id()
    joined = raw.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if "\x00" not in joined and not _LONE_SURROGATE.search(joined):
        return {"PI_SESSION_ID": joined, "PI_SESSION_ID_ENCODING": None}
    encoded = escape_lone_surrogates(json.dumps(joined, ensure_ascii=False))
    return {"PI_SESSION_ID": encoded, "PI_SESSION_ID_ENCODING": "json"}


class _ShellProtocol(asyncio.SubprocessProtocol):
    """Feeds the merged output into a queue (``None`` = end of output) and notes the exit."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.transport: asyncio.SubprocessTransport | None = None
        self.queued = 0
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        chunk = data.encode() if isinstance(data, str) else data
        self.chunks.put_nowait(chunk)
        self.queued += len(chunk)
        if self.queued > _FLOW_HIGH and not self.paused:
            self._pipe_reading(False)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.chunks.put_nowait(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def consumed(self, size: int) -> None:
        self.queued -= size
        if self.paused and self.queued < _FLOW_LOW:
            self._pipe_reading(True)

    def _pipe_reading(self, on: bool) -> None:
        pipe = self.transport.get_pipe_transport(1) if self.transport else None
        if isinstance(pipe, asyncio.ReadTransport) and not pipe.is_closing():
            if on:
                pipe.resume_reading()
            else:
                pipe.pause_reading()
            self.paused = not on


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _kill_group(pgid: int, exited: asyncio.Future[None]) -> None:
    """SIGTERM the whole group, give it :data:`KILL_GRACE_S` to go, then SIGKILL what is left."""
    loop = asyncio.get_running_loop()
    if _signal_group(pgid, signal.SIGTERM):
        deadline = loop.time() + KILL_GRACE_S
        # No event tells when a whole process group is gone: poll it.
        while loop.time() < deadline and _signal_group(pgid, 0):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        _signal_group(pgid, signal.SIGKILL)
    await asyncio.wait({exited}, timeout=2.0)


async def _pump(protocol: _ShellProtocol, output: BashOutput, report: Callable[[str], None]) -> None:
    loop = asyncio.get_running_loop()
    reported = 0.0
    while (chunk := await protocol.chunks.get()) is not None:
        protocol.consumed(len(chunk))
        await output.append(chunk)
        now = loop.time()
        if now - reported >= PROGRESS_INTERVAL_S:
            reported = now
            report(output.tail(PROGRESS_CHARS))


async def _cleanup(
    transport: asyncio.SubprocessTransport, protocol: _ShellProtocol, pump: asyncio.Task[None], kill: bool
) -> None:
    """Kill the group (on abort), close the pipes and let the pump take what was already read."""
    try:
        if kill:
            await _kill_group(transport.get_pid(), protocol.exited)
    finally:
        transport.close()  # a background job may still hold the pipe: stop reading from it
        if kill:
            pump.cancel()
        await asyncio.wait({pump}, timeout=5.0)
        if not pump.done():
            pump.cancel()
            await asyncio.wait({pump})
        if not pump.cancelled():
            pump.exception()  # retrieved here; _run reports it


async def _run(
    command: str,
    cwd: str,
    env: dict[str, str],
    limit_s: float | None,
    output: BashOutput,
    report: Callable[[str], None] = lambda _: None,
) -> tuple[int | None, bool]:
    """Run the command; ``(exit code or None when killed by a signal, timed out)``."""
    loop = asyncio.get_running_loop()
    protocol = _ShellProtocol(loop)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: protocol,
            _shell(),
            "-c",
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolFailure(f"Cannot start the shell: {exc.strerror or exc}") from None
    pump = asyncio.create_task(_pump(protocol, output, report))
    timed_out = False
    try:
        try:
            async with asyncio.timeout(limit_s):
                await asyncio.shield(protocol.exited)
        except TimeoutError:
            timed_out = True
            await _kill_group(transport.get_pid(), protocol.exited)
        await asyncio.wait({pump}, timeout=DRAIN_S)
    except asyncio.CancelledError:
        cleanup = asyncio.create_task(_cleanup(transport, protocol, pump, kill=True))
        _cleanups.add(cleanup)
        cleanup.add_done_callback(_cleanups.discard)
        await asyncio.shield(cleanup)
        raise
    code = transport.get_returncode()
    await _cleanup(transport, protocol, pump, kill=False)
    failure = None if pump.cancelled() else pump.exception()
    if failure is not None:
        raise ToolFailure(f"Cannot keep the command output: {failure}")
    return (code if code is not None and code >= 0 else None), timed_out


def _environment(ctx: ToolContext) -> dict[str, str]:
    env = dict(os.environ)
    for name, value in session_environment(ctx).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def create_bash_tool(cwd: str) -> Tool:
    @failures_as_results
    async def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        parsed = parse_args(BashArgs, args)
        if isinstance(parsed, ToolResult):
            return parsed
        if not await asyncio.to_thread(os.path.isdir, cwd):
            raise ToolFailure(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")
        timeout = parsed.timeout if parsed.timeout is not None and parsed.timeout > 0 else None
        output = BashOutput()

        def report(tail: str) -> None:
            ctx.report({"content": [{"type": "text", "text": tail}]})

        code, timed_out = await _run(parsed.command, cwd, _environment(ctx), timeout, output, report)
        if timed_out:
            formatted = await output.finish(empty_text="")
            status = f"Command timed out after {js_number(parsed.timeout or 0)} seconds"
            text = f"{formatted.text}\n\n{status}" if formatted.text else status
            return ToolResult([{"type": "text", "text": text}], details=formatted.details, is_error=True)
        formatted = await output.finish()
        if code:
            text = f"{formatted.text}\n\nCommand exited with code {code}"
            return ToolResult([{"type": "text", "text": text}], details=formatted.details, is_error=True)
        return ToolResult([{"type": "text", "text": formatted.text}], details=formatted.details)

    return Tool("bash", DESCRIPTION, SCHEMA, execute, prompt_snippet=SNIPPET)
