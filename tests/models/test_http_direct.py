"""The owned pool's responses are read in the turn's own task: a body read to its end leaves its
connection idle for the next request, one abandoned early is dropped at once, and closing the
client fails a reader still in the middle of a body instead of leaving it hanging."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import pytest

from fastagent_cli.errors import ProviderError
from fastagent_cli.models.openai_chat import OpenAIChatClient
from tests.fakes.fake_providers import FakeOpenAI, openai_reply
from tests.models.test_http_client import request_for


def pool_of(client: OpenAIChatClient) -> tuple[int, int, int]:
    """(open, idle, waiting) of the client's one origin."""
    transport = client._transport
    assert transport is not None
    (figures,) = transport.connections().values()
    return figures


async def test_answers_read_to_the_end_reuse_one_connection_without_a_worker_task() -> None:
    async with FakeOpenAI(record=False) as fake:
        fake.answer_always(openai_reply("fine"))
        client = OpenAIChatClient()
        request = request_for(fake)
        for _ in range(3):
            async with aclosing(client.stream(request)) as stream:
                async for item in stream:
                    assert client.in_flight == (
                        0 if isinstance(item, dict) else 1
                    )  # the final message comes after
                    workers = [t for t in asyncio.all_tasks() if t.get_name().startswith("http POST")]
                    assert workers == []  # read here, not handed over by an exchange's task
        assert client.in_flight == 0
        assert pool_of(client) == (1, 1, 0)  # one connection, idle again after every answer
        await client.aclose()


async def test_an_answer_left_early_drops_its_connection_and_the_next_one_opens_anew() -> None:
    async with FakeOpenAI(record=False) as fake:
        fake.answer_always(openai_reply("a longer answer than the reader waits for"))
        client = OpenAIChatClient()
        request = request_for(fake)
        async with aclosing(client.stream(request)) as stream:
            async for _ in stream:
                break  # the body is not read to its end: its bytes must not reach the next request
        assert client.in_flight == 0
        assert pool_of(client) == (0, 0, 0)
        async with aclosing(client.stream(request)) as stream:
            final = [item async for item in stream][-1]
        assert isinstance(final, dict) and final["stopReason"] == "stop"
        assert pool_of(client) == (1, 1, 0)
        await client.aclose()


async def test_closing_the_client_fails_a_reader_in_the_middle_of_a_body() -> None:
    async with FakeOpenAI(record=False) as fake:
        fake.enqueue_hold(openai_reply("never ends")[:2])  # the role, then a first delta
        client = OpenAIChatClient()
        request = request_for(fake)
        started = asyncio.Event()

        async def read() -> None:
            async with aclosing(client.stream(request)) as stream:
                async for _ in stream:
                    started.set()

        reader = asyncio.create_task(read())
        await asyncio.wait_for(started.wait(), 5)
        await client.aclose()
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(reader, 5)
        assert "the model client was closed" in caught.value.message
        assert caught.value.retryable
        assert client.in_flight == 0
        assert await fake.wait_disconnect(2.0)
