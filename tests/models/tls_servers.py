"""Small local servers for the TLS transport tests: a raw TLS server that answers one canned SSE
response and closes with or without ``close_notify``, a TCP server that never answers the TLS
handshake, and an HTTP ``CONNECT`` proxy that records its tunnels."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import threading
from typing import Any, Self

from fastagent_cli.models.types import ModelInfo


def _model(port: int, **overrides: Any) -> ModelInfo:
    fields: dict[str, Any] = {
        "provider": "fake-openai",
        "id": "m",
        "api": "openai-completions",
        "base_url": f"https://localhost:{port}/v1",
    }
    return ModelInfo(**{**fields, **overrides})


def _read_request(conn: ssl.SSLSocket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            return
        body += piece


class RawTlsServer:
    """A TLS server in a thread: each connection gets ``body`` after a ``Connection: close`` head
    (the body runs to the close), or, ``complete=False``, only a chunked head (a body cut before
    its first chunk); then the socket is closed with a TLS ``close_notify``
    (``close_notify=True``) or without one."""

    def __init__(
        self, context: ssl.SSLContext, body: bytes, *, close_notify: bool, complete: bool = True
    ) -> None:
        self.context = context
        self.body = body
        self.close_notify = close_notify
        self.complete = complete
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @staticmethod
    def sse(text: str) -> bytes:
        chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        return b"".join(b"data: %s\n\n" % json.dumps(e).encode() for e in (chunk, end)) + b"data: [DONE]\n\n"

    def model_info(self, **overrides: Any) -> ModelInfo:
        return _model(self.port, **overrides)

    def _serve(self) -> None:
        while True:
            try:
                raw, _ = self._sock.accept()
            except OSError:
                return
            try:
                conn = self.context.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):
                raw.close()
                continue
            try:
                _read_request(conn)
                if self.complete:
                    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                    conn.sendall(head + self.body)
                else:
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n"
                    )
                if self.close_notify:
                    conn.unwrap().close()
                else:
                    conn.close()  # SSLSocket.close() sends no close_notify
            except (OSError, ssl.SSLError):
                conn.close()

    async def __aenter__(self) -> Self:
        self._thread.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._sock.close()
        await asyncio.to_thread(self._thread.join, 2)


class StalledServer:
    """Accepts TCP connections and never says a word (a TLS handshake that stalls)."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._held: list[asyncio.StreamWriter] = []
        self.port = 0

    def model_info(self, **overrides: Any) -> ModelInfo:
        return _model(self.port, **overrides)

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._held.append(writer)
        with contextlib.suppress(ConnectionError):
            await reader.read()

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._hold, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        for writer in self._held:
            writer.close()
        assert self._server is not None
        self._server.close()


class ConnectProxy:
    """An HTTP proxy for ``CONNECT`` only: records each tunnel's target and any
    ``Proxy-Authorization``; ``answer`` (a raw response) refuses every tunnel with it."""

    def __init__(self, answer: bytes | None = None) -> None:
        self.answer = answer
        self.tunnels: list[str] = []
        self.authorizations: list[str] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.url = ""

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.lower() == "proxy-authorization":
                    self.authorizations.append(value.strip())
            if method != "CONNECT" or self.answer is not None:
                writer.write(self.answer or b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
                await writer.drain()
                return
            self.tunnels.append(target)
            host, _, port = target.rpartition(":")
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
