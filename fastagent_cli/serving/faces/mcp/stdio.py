"""``fastagent mcp [dir]``: the MCP server on stdin/stdout, for clients that launch their servers
(Claude Code, Claude Desktop, editors).

Newline-delimited JSON-RPC, one message per line each way (MCP stdio transport). stdout carries
protocol messages only: the command claims it first, so a tool's ``print`` or a child process
writes to stderr, where the log lines go too. Requests run concurrently (a
``notifications/cancelled`` read while a turn runs stops it). A line longer than the host's body
cap (1 MiB) is answered ``-32600`` and skipped. End of input (the client closing the pipe) lets
the requests in flight answer, then ends the process with status 0; cancelling :func:`serve_stdio`
(``fastagent mcp`` on SIGTERM / SIGINT, which a client sends when the wait is too long) aborts
their turns instead.

stdin is read by a daemon thread (a pipe, a file or a terminal alike; it never holds the process
open at exit), stdout written off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from typing import Any, BinaryIO, TextIO

from fastagent_cli.serving.body import MAX_BODY_BYTES
from fastagent_cli.serving.faces.mcp.protocol import (
    INVALID_REQUEST,
    PARSE_ERROR,
    McpConnection,
    error_message,
)

__all__ = ["serve_stdio"]

log = logging.getLogger("fastagent.mcp")

_EOF = b""


def _read_lines(
    stream: BinaryIO, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None]
) -> None:
    """The reader thread: whole lines onto ``queue`` (an over-long one as ``None``), then EOF."""
    try:
        while True:
            line = stream.readline(MAX_BODY_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_BODY_BYTES and not line.endswith(b"\n"):
                while (rest := stream.readline(MAX_BODY_BYTES)) and not rest.endswith(b"\n"):
                    pass
                loop.call_soon_threadsafe(queue.put_nowait, None)
                continue
            loop.call_soon_threadsafe(queue.put_nowait, line)
    except (OSError, ValueError):
        pass
    with contextlib.suppress(RuntimeError):  # the loop already closed
        loop.call_soon_threadsafe(queue.put_nowait, _EOF)


class _Writer:
    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        async with self._lock:
            await asyncio.to_thread(self._write, line)

    def _write(self, line: str) -> None:
        self._out.write(line)
        self._out.flush()


async def serve_stdio(connection: McpConnection, stdin: BinaryIO, stdout: TextIO) -> None:
    """Serve ``connection`` on the two streams until ``stdin`` ends."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    threading.Thread(target=_read_lines, args=(stdin, loop, queue), name="mcp-stdin", daemon=True).start()
    writer = _Writer(stdout)
    running: set[asyncio.Task[None]] = set()

    async def answer(message: Any) -> None:
        try:
            reply = await connection.handle(message, writer.send)
            if reply is not None:
                await writer.send(reply)
        except (BrokenPipeError, ConnectionResetError):
            log.debug("[mcp] stdout closed")

    try:
        while True:
            line = await queue.get()
            if line == _EOF:
                if running:
                    await asyncio.wait(set(running))
                return
            if line is None:
                await writer.send(error_message(None, INVALID_REQUEST, "Invalid Request: message over 1 MiB"))
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                await writer.send(error_message(None, PARSE_ERROR, "Parse error: the line is not JSON"))
                continue
            task = asyncio.create_task(answer(message))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        for task in list(running):
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
