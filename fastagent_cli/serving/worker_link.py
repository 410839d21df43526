"""The line between the ``dev`` supervisor and its worker: one inherited Unix socket.

The supervisor spawns the worker with ``FASTAGENT_DEV_WORKER=1``, the socket's descriptor in
``FASTAGENT_DEV_IPC_FD``, the listening sockets it owns (:mod:`~fastagent_cli.serving.listen`)
as descriptors in ``FASTAGENT_DEV_LISTEN_FDS`` (comma-separated): the worker serves on them and
binds nothing itself; and ``FASTAGENT_DEV_RELOAD=1`` once a worker has served (a reload: the On
Start notice is not sent again). Once listening, the worker writes one JSON line
``{"type": "ready", "port": 8787, "routeChannels": [...]}``. The supervisor answers with
``{"type": "public_url", "url": ...}`` whenever it has a ``--tunnel`` URL for this worker (the
worker announces it to its channels). On a code edit the supervisor sends ``{"type": "drain",
"timeoutS": 30}``: the worker stops accepting connections and taking work by itself, answers
``{"type": "draining"}`` (the supervisor then starts the next worker on the same sockets), lets
its turns in flight finish within the timeout (then ends the rest with a retryable ``failed``) and
exits. The socket is also a lifeline: when the supervisor goes away
(even killed), the worker reads end-of-file and shuts down, so it never outlives ``dev`` holding
the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "DEV_IPC_FD_ENV",
    "DEV_LISTEN_FDS_ENV",
    "DEV_RELOAD_ENV",
    "DEV_WORKER_ENV",
    "WorkerLink",
    "drain_timeout_of",
    "public_url_of",
    "read_message",
    "read_ready",
    "send_drain",
    "send_public_url",
]

DEV_WORKER_ENV = "FASTAGENT_DEV_WORKER"
DEV_IPC_FD_ENV = "FASTAGENT_DEV_IPC_FD"
DEV_LISTEN_FDS_ENV = "FASTAGENT_DEV_LISTEN_FDS"
DEV_RELOAD_ENV = "FASTAGENT_DEV_RELOAD"


class WorkerLink:
    """The worker's end of the line."""

    def __init__(self, fd: int, listen_fds: Sequence[int] = (), reload: bool = False) -> None:
        self.fd = fd
        self.listen_fds = tuple(listen_fds)
        """The supervisor's listening sockets, kept across restarts (empty: bind as configured)."""
        self.reload = reload
        """A worker spawned after an earlier one served (an edit restarted it)."""
        self._writer: asyncio.StreamWriter | None = None
        self._watch: asyncio.Task[None] | None = None
        self.public_urls: asyncio.Queue[str] = asyncio.Queue()
        """The tunnel URLs the supervisor sent, in order."""
        self.drains: asyncio.Queue[float] = asyncio.Queue()
        """The drain requests the supervisor sent (their timeouts, in seconds)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WorkerLink | None:
        environ = os.environ if env is None else env
        if environ.get(DEV_WORKER_ENV) != "1" or not environ.get(DEV_IPC_FD_ENV, "").isdigit():
            return None
        raw = [part for part in environ.get(DEV_LISTEN_FDS_ENV, "").split(",") if part.isdigit()]
        return cls(
            int(environ[DEV_IPC_FD_ENV]), [int(part) for part in raw], environ.get(DEV_RELOAD_ENV) == "1"
        )

    @classmethod
    def claim(cls) -> WorkerLink | None:
        """:meth:`from_env`, then clear the variables so processes this worker starts (a tool
        running ``fastagent``...) do not take themselves for a dev worker."""
        link = cls.from_env()
        for name in (DEV_WORKER_ENV, DEV_IPC_FD_ENV, DEV_LISTEN_FDS_ENV, DEV_RELOAD_ENV):
            os.environ.pop(name, None)
        return link

    def listen_sockets(self) -> list[socket.socket]:
        """The inherited listening sockets, as socket objects (this process owns the copies)."""
        return [socket.socket(fileno=fd) for fd in self.listen_fds]

    async def open(self, on_lost: Callable[[], None]) -> None:
        """Connect, and call ``on_lost`` when the supervisor's end closes."""
        sock = socket.socket(fileno=self.fd)
        reader, self._writer = await asyncio.open_unix_connection(sock=sock)

        async def watch() -> None:
            with contextlib.suppress(ConnectionError, ValueError):
                while raw := await reader.readline():
                    url = public_url_of(raw)
                    if url is not None:
                        self.public_urls.put_nowait(url)
                    timeout = drain_timeout_of(raw)
                    if timeout is not None:
                        self.drains.put_nowait(timeout)
            on_lost()

        self._watch = asyncio.create_task(watch())

    async def ready(self, port: int, route_channels: list[str]) -> None:
        if self._writer is None:
            return
        line = {"type": "ready", "port": port, "routeChannels": route_channels}
        self._writer.write(json.dumps(line).encode() + b"\n")
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()

    async def draining(self) -> None:
        """Tell the supervisor this worker stopped accepting (the next one may serve)."""
        if self._writer is None:
            return
        self._writer.write(json.dumps({"type": "draining"}).encode() + b"\n")
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def send_public_url(writer: asyncio.StreamWriter, url: str) -> None:
    """The supervisor's side: tell a worker the tunnel URL."""
    with contextlib.suppress(ConnectionError, RuntimeError):
        writer.write(json.dumps({"type": "public_url", "url": url}).encode() + b"\n")


def send_drain(writer: asyncio.StreamWriter, timeout_s: float) -> None:
    """The supervisor's side: ask a worker to drain (see the module docstring)."""
    with contextlib.suppress(ConnectionError, RuntimeError):
        writer.write(json.dumps({"type": "drain", "timeoutS": timeout_s}).encode() + b"\n")


def drain_timeout_of(raw: bytes) -> float | None:
    try:
        message = json.loads(raw)
    except ValueError:
        return None
    if isinstance(message, dict) and message.get("type") == "drain":
        timeout = message.get("timeoutS")
        if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout >= 0:
            return float(timeout)
    return None


def public_url_of(raw: bytes) -> str | None:
    try:
        message = json.loads(raw)
    except ValueError:
        return None
    if (
        isinstance(message, dict)
        and message.get("type") == "public_url"
        and isinstance(message.get("url"), str)
    ):
        return str(message["url"])
    return None


async def read_ready(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The supervisor's side: the worker's ready message, or ``None`` if the line closed first."""
    return await read_message(reader, "ready")


async def read_message(reader: asyncio.StreamReader, kind: str) -> dict[str, Any] | None:
    """The supervisor's side: the worker's next message of type ``kind``, or ``None`` if the line
    closed first."""
    while True:
        try:
            raw = await reader.readline()
        except (ConnectionError, ValueError):
            return None
        if not raw:
            return None
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("type") == kind:
            return message
