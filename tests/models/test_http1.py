"""The model connections' HTTP/1.1 framing against a raw server: every way a body can be framed,
what makes a connection reusable, and malformed answers as httpx errors."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from fastagent_cli.models.http_pool import PoolLimits


class RawServer:
    """Answers each request with the next canned bytes (split into the given pieces, 5 ms apart);
    ``close`` after an answer closes the connection. Records the peer port of every request."""

    def __init__(self, answers: list[tuple[list[bytes], bool]]) -> None:
        self.answers = answers
        self.peers: list[int] = []
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        await self.server.wait_closed()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        try:
            while self.answers:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                self.requests.append(head + await reader.readexactly(length))
                self.peers.append(writer.get_extra_info("peername")[1])
                pieces, close = self.answers.pop(0)
                for piece in pieces:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.005)
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


OK_CHUNKED = [
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel",
    b"lo\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
]


def pooled(pool: PoolLimits) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=pool.transport(), timeout=pool.timeout())


@pytest.fixture
def client() -> Callable[[], httpx.AsyncClient]:
    return lambda: pooled(PoolLimits(connect_timeout_s=2, read_timeout_s=2))


async def get(http: httpx.AsyncClient, url: str, method: str = "GET") -> httpx.Response:
    response = await http.request(method, url, content=b"q" if method == "POST" else None)
    await response.aread()
    return response


@pytest.mark.parametrize(
    ("pieces", "body"),
    [
        (OK_CHUNKED, b"hello world"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", b"cde"], b"abcde"),
        ([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], b"ok"),
        ([b"HTTP/1.1 204 No Content\r\n\r\n"], b""),
    ],
    ids=["chunked", "content-length", "100-continue", "no-content"],
)
async def test_framed_bodies_are_read_whole_and_the_connection_is_reused(
    client: Callable[[], httpx.AsyncClient], pieces: list[bytes], body: bytes
) -> None:
    async with RawServer([(pieces, False), (OK_CHUNKED, False)]) as server, client() as http:
        first = await get(http, server.url, "POST")
        assert first.content == body
        second = await get(http, server.url)
        assert second.content == b"hello world"
        assert server.peers[0] == server.peers[1]
        assert server.requests[0].startswith(b"POST / HTTP/1.1\r\n") and server.requests[0].endswith(
            b"\r\n\r\nq"
        )


@pytest.mark.parametrize(
    "pieces",
    [
        [b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"],
        [b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"],
        [b"HTTP/1.1 200 OK\r\n\r\nuntil the end"],
    ],
    ids=["connection-close", "http-1.0", "until-close"],
)
async def test_answers_that_end_the_connection_are_not_reused(
    client: Callable[[], httpx.AsyncClient], pieces: list[bytes]
) -> None:
    async with RawServer([(pieces, True), (OK_CHUNKED, False)]) as server, client() as http:
        first = await get(http, server.url)
        assert first.content in (b"ok", b"until the end")
        assert (await get(http, server.url)).content == b"hello world"
        assert server.peers[0] != server.peers[1]


@pytest.mark.parametrize(
    ("pieces", "error"),
    [
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"], "bad chunk size"),
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY"], "does not end in CRLF"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"], "complete message body"),
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"], "complete message body"),
        ([b"NOT HTTP\r\n\r\n"], "malformed status line"),
        ([b"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n"], "malformed header line"),
        ([], "Server disconnected without sending a response"),
    ],
    ids=["chunk-size", "chunk-end", "short-length", "short-chunk", "status-line", "header", "no-answer"],
)
async def test_malformed_or_cut_answers_are_httpx_protocol_errors(
    client: Callable[[], httpx.AsyncClient], pieces: list[bytes], error: str
) -> None:
    async with RawServer([(pieces, True), (OK_CHUNKED, False)]) as server, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match=error):
            await get(http, server.url)
        assert (await get(http, server.url)).content == b"hello world"  # the pool is fine after


async def test_a_silent_server_is_a_read_timeout() -> None:
    async with (
        RawServer([([], False), (OK_CHUNKED, False)]) as server,
        pooled(PoolLimits(read_timeout_s=0.2)) as http,
    ):
        with pytest.raises(httpx.ReadTimeout):
            await http.get(server.url)


async def body_blocks(http: httpx.AsyncClient, url: str) -> AsyncIterator[bytes]:
    async with http.stream("GET", url) as response:
        async for block in response.aiter_raw():
            yield block


async def test_chunks_that_arrive_together_come_out_as_one_block(
    client: Callable[[], httpx.AsyncClient],
) -> None:
    many = b"".join(b"3\r\nab%d\r\n" % (i % 10) for i in range(40))
    pieces = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + many + b"0\r\n\r\n"]
    async with RawServer([(pieces, False)]) as server, client() as http:
        blocks = [b async for b in body_blocks(http, server.url)]
    assert b"".join(blocks) == b"".join(b"ab%d" % (i % 10) for i in range(40))
    assert len(blocks) < 5  # not one block per chunk
