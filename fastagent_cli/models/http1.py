"""One HTTP/1.1 client connection: a request at a time, keep-alive, and a body read in bulk.

The model streams are long chunked responses of many small chunks (one per token). A general
client parses each chunk as its own event through several layers of async generators; this one
decodes every chunk a socket read brought in one pass over the bytes and hands the body on once
per read. The socket is a :class:`~fastagent_cli.models.http_socket.PacedStream` (connect and TLS,
timeouts, errors as ``httpcore`` exceptions, which the transport turns into ``httpx`` ones).

Framing follows RFC 9112: no body for ``HEAD``, 1xx, 204 and 304; else ``Transfer-Encoding:
chunked`` (extensions and trailers skipped), else ``Content-Length``, else the body runs to the
end of the connection. A connection is kept for the next request only when its response was read
to the end, the server did not say ``Connection: close`` and nothing unexpected followed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpcore

from fastagent_cli.models.http_socket import FirstByteTimeout

__all__ = ["Head", "Http1Connection"]

_MAX_HEAD = 256 * 1024
_MAX_LINE = 64 * 1024
_READ = 64 * 1024
_NO_BODY_STATUS = (204, 304)

# Connection states
_NEW, _IDLE, _ACTIVE, _CLOSED = "new", "idle", "active", "closed"
# Chunked-body states
_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


class Head:
    """A response's status line and header fields."""

    def __init__(self, status: int, reason: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers


async def _nothing() -> AsyncIterator[bytes]:
    empty: tuple[bytes, ...] = ()
    for piece in empty:
        yield piece


class Http1Connection:
    def __init__(self, origin: httpcore.Origin, opener: Any, keepalive_expiry: float | None) -> None:
        self.origin = origin
        self._opener = opener
        """``async (origin, timeout) -> network stream`` (TCP, plus TLS for https)."""
        self._keepalive_expiry = keepalive_expiry
        self._stream: Any = None
        self._state = _NEW
        self._expires_at: float | None = None
        self._buffer = b""
        self._reusable = False
        self._method = b""
        self._read_timeout: float | None = None
        self._first_byte_timeout: float | None = None
        self._http10 = False

    # --- what the pool asks ---------------------------------------------------------------------

    @property
    def network_stream(self) -> Any:
        return self._stream

    def is_available(self) -> bool:
        return self._state in (_NEW, _IDLE)

    @property
    def expires_at(self) -> float | None:
        """When an idle connection's keep-alive runs out (``time.monotonic()``)."""
        return self._expires_at

    def is_closed(self) -> bool:
        return self._state == _CLOSED

    def has_expired(self) -> bool:
        if self._state == _CLOSED:
            return True
        if self._state != _IDLE:
            return False
        if self._expires_at is not None and time.monotonic() > self._expires_at:
            return True
        # An idle socket that is readable has been closed by the server (or sent garbage).
        return bool(self._stream.get_extra_info("is_readable"))

    async def aclose(self) -> None:
        self._state = _CLOSED
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()

    # --- one exchange ---------------------------------------------------------------------------

    async def request(
        self,
        method: bytes,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        timeouts: dict[str, Any],
    ) -> Head:
        if self._state not in (_NEW, _IDLE):
            raise httpcore.ConnectionNotAvailable()
        self._state = _ACTIVE
        try:
            if self._stream is None:
                stream = await self._opener(self.origin, timeouts.get("connect"))
                if self._state == _CLOSED:  # released while it was connecting: the pool is closing
                    await stream.aclose()
                    raise httpcore.ConnectError("the connection pool was closed")
                self._stream = stream
            lines = [b"%s %s HTTP/1.1\r\n" % (method, target)]
            lines += [b"%s: %s\r\n" % (name, value) for name, value in headers]
            await self._stream.write(b"".join(lines) + b"\r\n" + body, timeouts.get("write"))
            self._method = method
            self._read_timeout = timeouts.get("read")
            self._first_byte_timeout = timeouts.get("first_byte", self._read_timeout)
            while True:
                head = await self._read_head()
                if not 100 <= head.status < 200 or head.status == 101:
                    return head
        except BaseException:
            await self._abort()
            raise

    async def _read_head(self) -> Head:
        """The next response head: its first byte within the first-byte timeout (a server that
        accepts the request and never answers), the rest within the between-chunks one."""
        first = not self._buffer
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            if len(self._buffer) > _MAX_HEAD:
                raise httpcore.RemoteProtocolError("the response head is too large")
            if first:
                data = await self._stream.read(_READ, self._first_byte_timeout, FirstByteTimeout)
                first = False
            else:
                data = await self._stream.read(_READ, self._read_timeout)
            if not data:
                raise httpcore.RemoteProtocolError("Server disconnected without sending a response.")
            self._buffer += data
        head, self._buffer = self._buffer[:end], self._buffer[end + 4 :]
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise httpcore.RemoteProtocolError(f"malformed status line: {lines[0][:100]!r}")
        self._http10 = parts[0] == b"HTTP/1.0"
        fields: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():
                raise httpcore.RemoteProtocolError(f"malformed header line: {line[:100]!r}")
            fields.append((name, value.strip(b" \t")))
        return Head(int(parts[1]), parts[2] if len(parts) > 2 else b"", fields)

    def body(self, response: Head) -> AsyncIterator[bytes]:
        """The body's blocks; iterate to the end (or :meth:`release` early, which closes)."""
        lowered = {name.lower(): value.lower() for name, value in response.headers}
        close = b"close" in lowered.get(b"connection", b"") or self._http10
        self._reusable = not close
        if self._method == b"HEAD" or response.status in _NO_BODY_STATUS or response.status < 200:
            self._finish()
            return _nothing()
        if b"chunked" in lowered.get(b"transfer-encoding", b""):
            return self._chunked()
        length = lowered.get(b"content-length")
        if length is not None:
            if not length.strip().isdigit():
                raise httpcore.RemoteProtocolError(f"invalid Content-Length: {length[:40]!r}")
            return self._sized(int(length))
        self._reusable = False
        return self._to_close()

    async def _more(self) -> bytes:
        return bytes(await self._stream.read(_READ, self._read_timeout))

    async def _sized(self, left: int) -> AsyncIterator[bytes]:
        data, self._buffer = self._buffer, b""
        while True:
            if data:
                piece, extra = data[:left], data[left:]
                left -= len(piece)
                if extra:
                    self._reusable = False  # bytes beyond the body: do not trust this connection
                yield piece
            if left <= 0:
                break
            data = await self._more()
            if not data:
                raise httpcore.RemoteProtocolError(
                    f"peer closed connection without sending complete message body (missing {left} bytes)"
                )
        self._finish()

    async def _to_close(self) -> AsyncIterator[bytes]:
        data, self._buffer = self._buffer, b""
        while True:
            if data:
                yield data
            data = await self._more()
            if not data:
                break
        self._finish()

    async def _chunked(self) -> AsyncIterator[bytes]:
        state, left = _SIZE, 0
        buf, self._buffer = self._buffer, b""
        while True:
            out: list[bytes] = []
            pos = 0
            size = len(buf)
            while state != _DONE:
                if state == _DATA:
                    take = min(left, size - pos)
                    if not take:
                        break
                    out.append(buf[pos : pos + take])
                    pos += take
                    left -= take
                    if left:
                        break
                    state = _DATA_END
                elif state == _DATA_END:
                    if size - pos < 2:
                        break
                    if buf[pos : pos + 2] != b"\r\n":
                        raise httpcore.RemoteProtocolError(
                            "malformed chunked body: a chunk does not end in CRLF"
                        )
                    pos += 2
                    state = _SIZE
                else:  # _SIZE or _TRAILER: one line
                    end = buf.find(b"\r\n", pos)
                    if end < 0:
                        if size - pos > _MAX_LINE:
                            raise httpcore.RemoteProtocolError("malformed chunked body: a line is too long")
                        break
                    line = buf[pos:end]
                    pos = end + 2
                    if state == _TRAILER:
                        if not line:
                            state = _DONE
                        continue
                    try:
                        left = int(line.split(b";", 1)[0].strip(), 16)
                    except ValueError:
                        raise httpcore.RemoteProtocolError(
                            f"malformed chunked body: bad chunk size {line[:40]!r}"
                        ) from None
                    state = _TRAILER if left == 0 else _DATA
            if out:
                yield out[0] if len(out) == 1 else b"".join(out)
            if state == _DONE:
                if pos < size:
                    self._reusable = False
                break
            buf = buf[pos:]
            data = await self._more()
            if not data:
                raise httpcore.RemoteProtocolError(
                    "peer closed connection without sending complete message body"
                )
            buf = buf + data if buf else data
        self._finish()

    def _finish(self) -> None:
        """The body was read to its end."""
        if self._reusable and self._state == _ACTIVE:
            self._state = _IDLE
            self._expires_at = (
                None if self._keepalive_expiry is None else time.monotonic() + self._keepalive_expiry
            )

    def release(self) -> None:
        """The caller is done with the response: a connection whose body was not read to the end
        is dropped at once (its remaining bytes would corrupt the next exchange; the socket's
        abort closes it without a round trip). Synchronous: safe in any ``finally``."""
        if self._state == _ACTIVE:
            self._state = _CLOSED
            stream, self._stream = self._stream, None
            if stream is not None:
                stream.abort()

    async def _abort(self) -> None:
        self._state = _CLOSED
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                await stream.aclose()
            except Exception:
                pass
