"""A response of the wire client's own pool, read in the reader's own task.

:mod:`~fastagent_cli.models.http_exchange` runs a request in a worker task of its own because
httpcore's pool bookkeeping is only safe against *anyio* cancellation. The owned pool
(:class:`~fastagent_cli.models.http_transport.PooledTransport`) hands its connections back with
synchronous bookkeeping in a ``finally``, so a plain ``Task.cancel()`` landing anywhere (while
the request waits for a connection, is sent, waits for its head or reads its body) leaves
nothing behind: the turn's task can send the request and read the body itself. That saves the
worker task, the head future and a queue hand-over (two loop wake-ups) per read of the socket.

A body read to its end leaves its connection idle in the pool; one abandoned early (the turn
was cancelled, the caller left the ``with`` block) is dropped at once, never reused: its
remaining bytes would corrupt the next exchange. Pacing (:meth:`DirectRead.pace`) is the
exchange's: once the answer has started the socket is read at most every ``pace_s``, and the
connection's next request starts unpaced.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from fastagent_cli.models.http_socket import PacedStream
from fastagent_cli.models.http_transport import PooledBody

__all__ = ["DirectRead"]


class DirectRead:
    """``DirectRead(response, pace_s)`` once the owned pool returned the head; ``close()`` it
    when done (any number of times, from any ``finally``)."""

    def __init__(self, response: httpx.Response, pace_s: float = 0.0) -> None:
        assert isinstance(response.stream, PooledBody), "a response of the owned pool"
        self.response = response
        self._body = response.stream
        self._pace_s = pace_s
        self._paced: PacedStream | None = None

    def chunks(self) -> AsyncIterator[bytes]:
        """The decoded body, chunk by chunk; transport failures raise the ``httpx`` error."""
        return self.response.aiter_bytes()

    def pace(self) -> None:
        """Read the rest of this body at most every ``pace_s`` (cheap to call again)."""
        if self._paced is None and self._pace_s:
            socket = self.response.extensions.get("network_stream")
            if isinstance(socket, PacedStream):
                socket.pace_s = self._pace_s
                self._paced = socket

    def close(self) -> None:
        """Hand the connection back (idle if the body was read to its end, else dropped)."""
        if self._paced is not None:
            self._paced.pace_s = 0.0  # the connection's next request starts unpaced
            self._paced = None
        self._body.close_nowait()
