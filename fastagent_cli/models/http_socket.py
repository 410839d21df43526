"""The socket under a model connection: an asyncio protocol with reads that can be paced.

:func:`open_stream` connects (TLS when given a context) and returns a :class:`PacedStream`, the
``read`` / ``write`` / ``aclose`` / ``get_extra_info`` stream :mod:`~fastagent_cli.models.http1`
speaks HTTP/1.1 over. A read returns everything that has arrived (up to ``max_bytes``), or waits
for the next bytes for at most its timeout. Failures are httpcore's exceptions (``ConnectError``,
``ConnectTimeout``, ``ReadError``, ``ReadTimeout``, ``WriteError``, ``WriteTimeout``), which the
transport turns into the usual ``httpx`` ones.

Pacing: while ``pace_s`` is set, the socket is not watched between reads and a read waits until
``pace_s`` after the previous one, so the bytes of several tokens that arrive meanwhile wait in
the kernel and come out of one read: one wake-up of the loop, one pass through the HTTP and SSE
parsers and one write to the client per batch instead of per token. Cancelling a read (a turn
aborted) leaves the stream consistent; the connection is closed by its owner.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import time
from typing import Any

import httpcore

__all__ = ["ChunkTimeout", "FirstByteTimeout", "PacedStream", "open_stream", "readable"]


class _ReadTimeout(httpcore.ReadTimeout):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds


class FirstByteTimeout(_ReadTimeout):
    """No byte of the response (its head) within the first-byte timeout of sending the request."""


class ChunkTimeout(_ReadTimeout):
    """The response's body went silent for longer than the between-chunks timeout."""


def readable(fd: int) -> bool:
    """Whether ``fd`` has bytes (or an end of stream) to read right now. ``poll``, not
    ``select``: select fails on descriptors above 1023, which a busy server has."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: list[bytes] = []
        self.eof = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.drained: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self._wake()

    def eof_received(self) -> bool | None:
        self.eof = True
        self._wake()
        return None

    def connection_lost(self, exc: BaseException | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        if self.drained is None:
            self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def _timed_out(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


class PacedStream:
    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._pace_s = 0.0
        self._last = 0.0
        self._paused = False

    @property
    def pace_s(self) -> float:
        return self._pace_s

    @pace_s.setter
    def pace_s(self, value: float) -> None:
        self._pace_s = value
        if not value and self._paused:  # unpaced again: watch the socket (a server close shows)
            self._paused = False
            if not self._transport.is_closing():
                self._transport.resume_reading()

    async def read(
        self, max_bytes: int, timeout_s: float | None = None, error: type[_ReadTimeout] = ChunkTimeout
    ) -> bytes:
        protocol = self._protocol
        if self._pace_s > 0:
            wait = self._last + self._pace_s - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
        if not protocol.chunks and not protocol.eof:
            if self._paused:
                self._paused = False
                self._transport.resume_reading()
            await self._wait(protocol, timeout_s, error)
        if not protocol.chunks:
            if protocol.error is not None:
                raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__)
            return b""
        chunks = protocol.chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        if len(data) > max_bytes:
            chunks.append(data[max_bytes:])
            data = data[:max_bytes]
        self._last = time.monotonic()
        if self._pace_s > 0 and not self._paused and not protocol.eof:
            self._paused = True  # until the next read: let the kernel gather what comes meanwhile
            self._transport.pause_reading()
        return data

    async def _wait(self, protocol: _Protocol, timeout_s: float | None, error: type[_ReadTimeout]) -> None:
        loop = asyncio.get_running_loop()
        waiter = protocol.waiter = loop.create_future()
        expiry = None if timeout_s is None else loop.call_later(timeout_s, _timed_out, waiter)
        try:
            await waiter
        except TimeoutError:
            assert timeout_s is not None
            raise error(timeout_s) from None
        finally:
            protocol.waiter = None
            if expiry is not None:
                expiry.cancel()

    async def write(self, buffer: bytes, timeout_s: float | None = None) -> None:
        protocol = self._protocol
        if self._transport.is_closing() or protocol.error is not None:
            raise httpcore.WriteError("the connection is closed")
        self._transport.write(buffer)
        drained = protocol.drained
        if drained is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(drained), timeout_s)
        except TimeoutError:
            raise httpcore.WriteTimeout(f"timed out after {timeout_s:g} s") from None
        if protocol.error is not None:
            raise httpcore.WriteError(str(protocol.error) or "the connection was lost")

    async def start_tls(self, context: ssl.SSLContext, hostname: str, timeout_s: float | None) -> PacedStream:
        """TLS over this connection (inside a proxy's tunnel): the stream to use from now on."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout_s):
                transport = await loop.start_tls(
                    self._transport, self._protocol, context, server_hostname=hostname
                )
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"the TLS handshake timed out after {timeout_s:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        assert isinstance(transport, asyncio.Transport)
        self._protocol.transport = transport
        return PacedStream(transport, self._protocol)

    def abort(self) -> None:
        """Drop the connection now (an HTTP connection has nothing to flush when it is dropped)."""
        self._transport.abort()

    async def aclose(self) -> None:
        self.abort()

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            protocol = self._protocol
            if protocol.chunks or protocol.eof:
                return True
            sock = self._transport.get_extra_info("socket")
            return sock is None or sock.fileno() < 0 or readable(sock.fileno())
        return self._transport.get_extra_info(info)


async def open_stream(
    host: str, port: int, ssl_context: ssl.SSLContext | None, timeout_s: float | None
) -> PacedStream:
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout_s):
            transport, protocol = await loop.create_connection(
                _Protocol, host, port, ssl=ssl_context, server_hostname=host if ssl_context else None
            )
    except TimeoutError:
        raise httpcore.ConnectTimeout(f"timed out after {timeout_s:g} s") from None
    except (OSError, ssl.SSLError) as exc:
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    assert isinstance(transport, asyncio.Transport)
    return PacedStream(transport, protocol)
