"""What the host enforces on every connection: header and request deadlines (slowloris gets a 408
instead of a connection for ever), a connection cap, and malformed requests answered 400 with one
quiet log line instead of a traceback at ERROR."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from fastagent_cli.contract import Completed, Text
from fastagent_cli.serving.body import read_body_capped, text_response
from fastagent_cli.serving.host import Server, serve
from fastagent_cli.serving.http_limits import HEADERS_TIMEOUT_S, REQUEST_TIMEOUT_S
from fastagent_cli.serving.invoke_http import create_invoke_handler
from tests.serving.conftest import FakeAgent, split_response

Serve = Callable[..., Awaitable[int]]


@pytest.fixture
async def serve_with() -> AsyncIterator[Serve]:
    servers: list[Server] = []

    async def start(handler: object = None, **limits: object) -> int:
        async def echo(request: web.BaseRequest) -> web.StreamResponse:
            body = await read_body_capped(request, 1 << 20)
            return text_response(f"got {len(body or b'')} bytes\n", 200)

        server = serve(handler or echo, port=0, host="127.0.0.1", **limits)  # type: ignore[arg-type]
        servers.append(server)
        return await server.listening

    yield start
    for server in servers:
        await server.close()


async def read_all(reader: asyncio.StreamReader, within: float = 10) -> bytes:
    return await asyncio.wait_for(reader.read(), within)


async def trickle(port: int, data: bytes, *, head: bytes = b"") -> bytes:
    """Send ``head``, then ``data`` one byte every 20 ms until the server answers; the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def dribble() -> None:
        writer.write(head)
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.02)

    sender = asyncio.create_task(dribble())
    try:
        return await read_all(reader)
    finally:
        sender.cancel()
        writer.close()


def test_the_deadlines_are_the_originals() -> None:
    assert (HEADERS_TIMEOUT_S, REQUEST_TIMEOUT_S) == (60.0, 300.0)


async def test_headers_trickled_byte_by_byte_get_408_at_the_header_deadline(serve_with: Serve) -> None:
    port = await serve_with(headers_timeout=0.6)
    started = time.monotonic()
    raw = await trickle(port, b"POST /invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200)
    status, headers, body = split_response(raw)
    assert (status, body) == (408, b"request timeout\n")
    assert headers["connection"] == "close"
    assert 0.5 < time.monotonic() - started < 5


async def test_an_idle_connection_is_closed_at_the_header_deadline(serve_with: Serve) -> None:
    port = await serve_with(headers_timeout=0.3)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        assert await read_all(reader, 5) == b""  # closed without a word
    finally:
        writer.close()


async def test_a_keep_alive_connection_gets_a_fresh_header_window_per_request(serve_with: Serve) -> None:
    port = await serve_with(headers_timeout=0.5)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for _ in range(3):  # 3 x 0.3 s: longer than one window, each request inside its own
            await asyncio.sleep(0.3)
            writer.write(b"GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await writer.drain()
            assert (await asyncio.wait_for(reader.readuntil(b"bytes\n"), 5)).endswith(b"got 0 bytes\n")
    finally:
        writer.close()


async def test_a_body_still_trickling_in_at_the_request_deadline_gets_408(serve_with: Serve) -> None:
    port = await serve_with(request_timeout=0.8)
    raw = await trickle(
        port, b"z" * 200, head=b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"
    )
    assert split_response(raw)[0] == 408


async def test_the_request_deadline_never_cuts_a_stream_already_under_way(serve_with: Serve) -> None:
    agent = FakeAgent([Text("a"), 1.2, Text("b"), Completed()])
    port = await serve_with(create_invoke_handler(agent), request_timeout=0.5, headers_timeout=0.5)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = b'{"session":"s","text":"x"}'
    try:
        writer.write(
            b"POST /invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\n" + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        )
        raw = await read_all(reader)
    finally:
        writer.close()
    assert b'"type":"completed"' in raw and b'"delta":"b"' in raw


async def test_connections_over_the_cap_are_answered_503(
    serve_with: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "fastagent.host")
    port = await serve_with(max_connections=2)
    held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
    await asyncio.sleep(0.05)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    raw = await read_all(reader)
    writer.close()
    status, _, body = split_response(raw)
    assert (status, body) == (503, b"too many connections\n")
    assert any("connection limit reached (2 open)" in r.getMessage() for r in caplog.records)
    for _, w in held:
        w.close()
    await asyncio.sleep(0.1)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)  # room again
    writer.write(b"GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert split_response(await read_all(reader))[0] == 200
    writer.close()


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Name: y\r\n\r\n",
        b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot hex\r\n0\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGARBAGE\r\n\r\n",
    ],
    ids=["nul-in-target", "space-in-header-name", "bad-chunk-size", "garbage-after-request"],
)
async def test_malformed_requests_are_400_and_one_debug_line(
    serve_with: Serve, caplog: pytest.LogCaptureFixture, request_bytes: bytes
) -> None:
    caplog.set_level(logging.DEBUG)
    port = await serve_with()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request_bytes)
    await writer.drain()
    raw = await read_all(reader)
    writer.close()
    assert b" 400 Bad Request\r\n" in raw
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert loud == [], [r.getMessage() for r in loud]
    quiet = [r.getMessage() for r in caplog.records if "malformed request" in r.getMessage()]
    assert len(quiet) == 1 and "\n" not in quiet[0]
