"""Listening sockets the ``dev`` supervisor owns, so a reload refuses no connection.

The supervisor binds the address once (:func:`bind_sockets`) and hands the sockets to every
worker it spawns (inherited descriptors). While one worker stops and the next starts, new
connections wait in the kernel's accept queue and the next worker answers them: nothing is
refused. While no worker can run (its start failed; ``dev`` waits for the next save),
:class:`Unavailable` answers every request ``503`` with the reason, instead of letting clients
hang in the queue.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence

from fastagent_cli.errors import ServeError
from fastagent_cli.serving.binding import concrete_port

__all__ = ["BACKLOG", "Unavailable", "bind_sockets", "bound_port"]

BACKLOG = 128
"""Connections the kernel queues for a worker (aiohttp's own default)."""


def bind_sockets(host: str | None, port: int) -> list[socket.socket]:
    """Listening sockets for ``host:port`` the way aiohttp binds them (``None``: every interface,
    one socket per address family, on one port free in both; ``port`` 0 picks one)."""
    from fastagent_cli.serving.host import bind_error_message

    port = concrete_port(host, port)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], bound_port(sockets[:1]), *address[2:])
            sock.bind(address)
            sock.listen(BACKLOG)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise ServeError(bind_error_message(exc, port, host)) from None
    return sockets


def bound_port(sockets: Sequence[socket.socket]) -> int:
    return int(sockets[0].getsockname()[1])


class _Refusal(asyncio.Protocol):
    def __init__(self, body: bytes) -> None:
        self.body = body
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(self.body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
        )
        self.transport.write(head.encode() + self.body)
        self.transport.close()


class Unavailable:
    """Answer ``503 <reason>`` on the supervisor's sockets until :meth:`close`."""

    def __init__(self, sockets: Sequence[socket.socket], reason: str) -> None:
        self._sockets = sockets
        self._body = (reason.rstrip() + "\n").encode()
        self._servers: list[asyncio.Server] = []

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for sock in self._sockets:
            # A duplicate: closing the server closes it, not the socket the next worker inherits.
            server = await loop.create_server(lambda: _Refusal(self._body), sock=sock.dup(), backlog=BACKLOG)
            self._servers.append(server)

    async def close(self) -> None:
        """Stop accepting (queued connections stay for the next worker). Reading stops first, so a
        connection accepted in the last loop tick is answered, not orphaned by the close."""
        servers, self._servers = self._servers, []
        loop = asyncio.get_running_loop()
        for server in servers:
            for sock in server.sockets:
                loop.remove_reader(sock.fileno())
        await asyncio.sleep(0)
        for server in servers:
            server.close()
