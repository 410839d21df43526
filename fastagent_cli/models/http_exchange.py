"""One streaming HTTP exchange through a borrowed ``httpx`` client (httpcore's pool), run in a task
of its own so that cancelling the turn that reads it can never interrupt httpcore in the middle of
its pool bookkeeping. The wire clients' own pool needs none of this: its responses are read in the
turn's task (:mod:`~fastagent_cli.models.http_direct`).

Why: httpcore shields the close of a response (and the hand-over of a pooled connection) against
*anyio* cancellation only. A plain ``Task.cancel()``, which is how an asyncio turn is aborted,
that lands while a response is being closed leaves the request registered in the pool for ever;
after ``max_connections`` of those every later model request waits on the pool and the server is
wedged. So the reader never runs httpcore code itself:

* a worker task sends the request and waits for the response head with no cancellation at all
  (the pool, connect and read timeouts bound it); a reader that leaves before the head arrives
  just stops waiting, and the worker closes the response as soon as it has one;
* the worker reads the body inside an anyio cancel scope and hands the chunks over a queue; a
  reader that leaves cancels that scope, the one kind of cancellation httpcore's shielded closes
  are written for;
* the worker closes the response itself, so by the time the reader sees the end of the body the
  connection is back in the pool.

Once the reader has handed on the answer's first delta it calls
:meth:`StreamedResponse.answer_started`: from then on the socket is read at most every
``pace_s`` (see :class:`~fastagent_cli.models.http_socket.PacedStream`), so tokens that arrive
close together are read, parsed and relayed as one batch; the first token is never delayed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

import anyio
import httpx

from fastagent_cli.models.http_socket import PacedStream

__all__ = ["BodySource", "Exchange", "StreamedResponse", "with_request"]

_END = object()


class BodySource(Protocol):
    """Where a :class:`StreamedResponse`'s body comes from: an :class:`Exchange`'s worker, or
    the owned pool read in the reader's own task (:class:`~fastagent_cli.models.http_direct.DirectRead`)."""

    def chunks(self) -> AsyncIterator[bytes]: ...

    def pace(self) -> None: ...


class StreamedResponse:
    """The head of a response, and its body (read it once)."""

    def __init__(self, response: httpx.Response, body: BodySource) -> None:
        self.status_code = response.status_code
        self.headers = response.headers
        self._body = body

    def answer_started(self) -> None:
        """The first delta has been handed on: read the rest in batches (cheap to call again)."""
        self._body.pace()

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The decoded body, chunk by chunk; transport failures raise the ``httpx`` error."""
        return self._body.chunks()

    async def aread(self) -> bytes:
        return b"".join([chunk async for chunk in self.aiter_bytes()])


Send = Callable[[], Awaitable[httpx.Response]]
"""Sends the request and returns the streamed response (its head read, its body not)."""


def with_request(exc: httpx.HTTPError, request: Callable[[], httpx.Request]) -> httpx.HTTPError:
    """``exc`` naming the request that failed (error messages name its URL): a transport error
    raised outside ``httpx.AsyncClient.send`` knows none yet."""
    if isinstance(exc, httpx.RequestError):
        try:
            exc.request  # noqa: B018 (set: nothing to do)
        except RuntimeError:
            exc.request = request()
    return exc


class Exchange:
    """Start with ``Exchange(send, request, name)``; ``await response()``; always ``abandon()``
    when done. ``send`` sends the request (``httpx.AsyncClient.send``, or the pool's own
    :meth:`~fastagent_cli.models.http_transport.PooledTransport.send`); ``request`` builds the
    ``httpx.Request`` that errors name (called only on failure)."""

    def __init__(
        self, send: Send, request: Callable[[], httpx.Request], name: str, pace_s: float = 0.0
    ) -> None:
        self._send = send
        self._request = request
        self.pace_s = pace_s
        self._paced: PacedStream | None = None
        self._socket: object = None
        self._reading = False
        self._head: asyncio.Future[httpx.Response] = asyncio.get_running_loop().create_future()
        self._chunks: asyncio.Queue[object] = asyncio.Queue()
        self._scope = anyio.CancelScope()  # cancelling it before it is entered is allowed
        self._abandoned = False
        self.task = asyncio.create_task(self._run(), name=name)

    async def response(self) -> StreamedResponse:
        """The response head (raises the ``httpx`` error when the request failed)."""
        return StreamedResponse(await asyncio.shield(self._head), self)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as the worker hands it over."""
        while True:
            chunk = await self.next_chunk()
            if chunk is None:
                return
            yield chunk

    async def next_chunk(self) -> bytes | None:
        item = await self._chunks.get()
        if item is _END:
            self._chunks.put_nowait(_END)  # a second reader sees the end too
            return None
        if isinstance(item, BaseException):
            raise item
        assert isinstance(item, bytes)
        return item

    def pace(self) -> None:
        """Read the rest of this body at most every ``pace_s`` (only while it is being read: the
        connection's next request starts unpaced)."""
        socket = self._socket
        if self._reading and self._paced is None and isinstance(socket, PacedStream) and self.pace_s:
            socket.pace_s = self.pace_s
            self._paced = socket

    def abandon(self) -> None:
        """The reader is done (finished, failed or cancelled): stop reading and close. Never
        blocks; the worker finishes the close on its own."""
        self._abandoned = True
        self._scope.cancel()

    async def _run(self) -> None:
        try:
            response = await self._send()
        except BaseException as exc:
            if self._abandoned or not isinstance(exc, Exception):
                self._head.cancel()
            else:
                self._head.set_exception(
                    with_request(exc, self._request) if isinstance(exc, httpx.HTTPError) else exc
                )
            if not isinstance(exc, Exception):
                raise
            return
        try:
            if self._abandoned:
                self._head.cancel()
                return
            self._head.set_result(response)
            self._socket = response.extensions.get("network_stream")
            self._reading = True
            with self._scope:
                try:
                    async for chunk in response.aiter_bytes():
                        self._chunks.put_nowait(chunk)
                except httpx.HTTPError as exc:
                    self._chunks.put_nowait(with_request(exc, self._request))
                else:
                    self._chunks.put_nowait(_END)
        except BaseException:
            # Cancelled from outside (the client is being closed): the reader must not hang.
            self._chunks.put_nowait(httpx.ReadError("the model client was closed", request=self._request()))
            raise
        finally:
            self._reading = False
            if self._paced is not None:
                self._paced.pace_s = 0.0  # the connection's next request starts unpaced
            await response.aclose()
