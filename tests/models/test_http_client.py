"""The shared HTTP half of the wire clients: a reader cancelled at any moment leaves nothing behind in
the connection pool, and a full pool is a retryable error (and a log line), never a silent hang."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
from collections.abc import Callable
from contextlib import aclosing

import httpx
import pytest

from fastagent_cli.errors import ProviderError
from fastagent_cli.models.anthropic_messages import AnthropicMessagesClient
from fastagent_cli.models.http_client import HttpStreamClient
from fastagent_cli.models.http_pool import PoolLimits, new_http_client
from fastagent_cli.models.openai_chat import OpenAIChatClient
from fastagent_cli.models.openai_responses import OpenAIResponsesClient
from fastagent_cli.models.types import ModelRequest
from tests.fakes.fake_providers import (
    FakeAnthropic,
    FakeOpenAI,
    FakeProvider,
    FakeResponses,
    anthropic_reply,
    openai_reply,
)
from tests.fakes.responses_builders import responses_reply

ClientFactory = Callable[[httpx.AsyncClient | None], HttpStreamClient]

WIRES: list[tuple[type[FakeProvider], ClientFactory, list[object]]] = [
    (FakeOpenAI, lambda http: OpenAIChatClient(http), openai_reply("a fast answer")),  # type: ignore[list-item]
    (FakeAnthropic, lambda http: AnthropicMessagesClient(http), anthropic_reply("a fast answer")),  # type: ignore[list-item]
    (FakeResponses, lambda http: OpenAIResponsesClient(http), responses_reply("a fast answer")),  # type: ignore[list-item]
]


def request_for(fake: FakeProvider) -> ModelRequest:
    return ModelRequest(
        model=fake.model_info(),
        system="",
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}],
        api_key="test-key",
    )


async def drain(client: HttpStreamClient, request: ModelRequest) -> object:
    final: object = None
    async with aclosing(client.stream(request)) as stream:  # type: ignore[attr-defined]
        async for item in stream:
            final = item
    return final


def httpcore_pool() -> httpx.AsyncClient:
    return httpx.AsyncClient(limits=httpx.Limits(max_connections=2, max_keepalive_connections=2))


def own_pool() -> httpx.AsyncClient:
    return new_http_client(PoolLimits(max_connections=2, max_keepalive=2))


def owned() -> contextlib.AbstractAsyncContextManager[None]:
    return contextlib.nullcontext(None)  # the wire client builds its pool and sends to it directly


@pytest.mark.parametrize(
    "make_http", [own_pool, httpcore_pool, owned], ids=["own-pool", "httpcore-pool", "owned"]
)
@pytest.mark.parametrize(
    ("fake_type", "make_client", "reply"), WIRES, ids=["openai", "anthropic", "responses"]
)
async def test_readers_cancelled_at_any_moment_leave_the_pool_free(
    fake_type: type[FakeProvider],
    make_client: ClientFactory,
    reply: list[object],
    make_http: Callable[[], contextlib.AbstractAsyncContextManager[httpx.AsyncClient | None]],
) -> None:
    jitter = random.Random(3)
    async with fake_type(record=False) as fake, make_http() as http:
        fake.answer_always(reply, burst_after=2, pause=lambda: jitter.uniform(0, 0.001))  # type: ignore[arg-type]
        client = make_client(http)
        request = request_for(fake)
        for _ in range(300):
            reader = asyncio.create_task(drain(client, request))
            for _ in range(jitter.randint(0, 60)):
                await asyncio.sleep(0)
            reader.cancel()
            if jitter.random() < 0.3:  # an impatient caller cancels twice
                await asyncio.sleep(0)
                reader.cancel()
            try:
                await reader
            except asyncio.CancelledError:
                pass
        # Had a cancellation stranded a request in the pool, these would wait on it for ever.
        finals = await asyncio.wait_for(asyncio.gather(drain(client, request), drain(client, request)), 10)
        assert all(isinstance(f, dict) and f["stopReason"] == "stop" for f in finals), finals
        await client.aclose()
        assert client.in_flight == 0


async def test_a_full_pool_is_a_retryable_error_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "fastagent.models")
    async with FakeOpenAI() as fake:
        fake.enqueue_hold(openai_reply("never ends")[:1])
        client = OpenAIChatClient(pool=PoolLimits(max_connections=1, pool_timeout_s=0.2))
        request = request_for(fake)
        holder = asyncio.create_task(drain(client, request))
        await asyncio.wait_for(fake.wait_request(), 5)
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(drain(client, request), 5)
        assert caught.value.retryable
        assert "every model connection is busy" in caught.value.message
        holder.cancel()
        await client.aclose()
    logged = [r.getMessage() for r in caplog.records]
    assert any("model connection pool is full (1 requests in flight, limit 1)" in m for m in logged)
    assert any("no free model connection within 0.2 s" in m for m in logged)


async def _heads_of_one_request_each(clients: list[HttpStreamClient]) -> list[bytes]:
    """The request head (bytes as sent) of one chat-completions request from each client."""
    heads: list[bytes] = []
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(v)
            for k, _, v in (line.partition(b": ") for line in head.split(b"\r\n"))
            if k == b"Content-Length"
        )
        await reader.readexactly(length)
        heads.append(head)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        for client in clients:
            request = request_for(FakeOpenAI())
            request.model = request.model.__class__(
                provider="local", id="m", api="openai-completions", base_url=f"http://127.0.0.1:{port}/v1"
            )
            final = await drain(client, request)
            assert isinstance(final, dict) and final["content"] == [{"type": "text", "text": "ok"}]
            await client.aclose()
    finally:
        server.close()
        await server.wait_closed()
    return heads


async def test_the_owned_pool_is_sent_the_request_httpx_would_send() -> None:
    direct, through_httpx = await _heads_of_one_request_each(
        [OpenAIChatClient(), OpenAIChatClient(new_http_client(PoolLimits()))]
    )
    assert direct.split(b"\r\n") == through_httpx.split(b"\r\n")  # every field, spelling, place
    assert direct.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")


async def test_a_refused_connection_of_the_owned_pool_names_the_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    request = request_for(FakeOpenAI())
    request.model = request.model.__class__(
        provider="local", id="m", api="openai-completions", base_url=f"http://127.0.0.1:{port}/v1"
    )
    client = OpenAIChatClient()
    with pytest.raises(ProviderError) as caught:
        await drain(client, request)
    await client.aclose()
    assert f"nothing is listening at http://127.0.0.1:{port}/v1/chat/completions" in caught.value.message
    assert not caught.value.retryable  # a lasting failure, as through httpx
