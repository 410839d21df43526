"""Paced reads on the model side: once the first delta is out, the rest of the answer is read in
batches; the first delta is never held back, on a new connection or a reused one; every delta
still comes out, in order, one per chunk."""

from __future__ import annotations

import time
from contextlib import aclosing

from fastagent_cli.models.http_pool import PoolLimits
from fastagent_cli.models.openai_chat import OpenAIChatClient
from fastagent_cli.models.types import ModelRequest, StreamDelta
from tests.fakes.fake_providers import FakeOpenAI, openai_reply

PACE_S = 1.0
TOKEN_GAP_S = 0.02
WORDS = [f"w{i} " for i in range(12)]


def request_for(fake: FakeOpenAI) -> ModelRequest:
    return ModelRequest(
        model=fake.model_info(),
        system="",
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}],
        api_key="test-key",
    )


def reply() -> list[object]:
    chunks = openai_reply("x", parts=1)
    role, finish = chunks[0], chunks[-1]
    return [role, *[{**chunks[1], "choices": [{"index": 0, "delta": {"content": w}}]} for w in WORDS], finish]


async def timed_deltas(client: OpenAIChatClient, request: ModelRequest) -> tuple[list[str], list[float]]:
    started = time.monotonic()
    texts: list[str] = []
    times: list[float] = []
    async with aclosing(client.stream(request)) as stream:
        async for item in stream:
            if isinstance(item, StreamDelta):
                texts.append(item.text)
                times.append(time.monotonic() - started)
    return texts, times


def bursts(times: list[float], gap: float = TOKEN_GAP_S / 2) -> int:
    """How many groups the deltas arrived in (deltas closer than ``gap`` form one group)."""
    return 1 + sum(1 for a, b in zip(times, times[1:], strict=False) if b - a > gap)


async def test_first_delta_is_not_delayed_and_the_rest_comes_in_batches() -> None:
    async with FakeOpenAI(delay=TOKEN_GAP_S) as fake:
        client = OpenAIChatClient(pool=PoolLimits(coalesce_s=PACE_S))
        request = request_for(fake)
        for _ in range(2):  # the second answer reuses the connection: it must start unpaced too
            fake.enqueue_stream(reply())
            texts, times = await timed_deltas(client, request)
            assert texts == WORDS  # every delta, in order, none merged or split
            assert times[0] < PACE_S * 0.6, times  # the first token was not held back
            # Unpaced, 12 tokens 20 ms apart arrive one by one; paced, in a few reads.
            assert bursts(times) <= 4, times
            assert times[-1] >= PACE_S * 0.9, times  # the batches really were paced
        await client.aclose()


async def test_without_pacing_every_token_arrives_on_its_own() -> None:
    async with FakeOpenAI(delay=TOKEN_GAP_S) as fake:
        client = OpenAIChatClient(pool=PoolLimits(coalesce_s=0.0))
        fake.enqueue_stream(reply())
        texts, times = await timed_deltas(client, request_for(fake))
        assert texts == WORDS
        assert bursts(times) >= len(WORDS) // 3, times  # the control: the fake really streams
        await client.aclose()
