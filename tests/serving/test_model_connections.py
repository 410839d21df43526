"""Clients that leave right after the first event never leak connections to the model: the real
``fastagent start`` process on a fast OpenAI-compatible fake, 300 early disconnects, then the
server's established connections to the fake are counted and one more turn must complete."""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path

import pytest

from tests.conftest import AgentFactory
from tests.fakes.fake_providers import FakeOpenAI, openai_reply
from tests.serving.serving_proc import ServerProcess, answer, established_connections, invoke

pytestmark = pytest.mark.slow

DISCONNECTS = 300
REPLY = "Hello there, this answer streams fast."


def fake_model_agent(make_agent: AgentFactory, fake: FakeOpenAI) -> Path:
    provider = {
        "baseUrl": fake.base_url,
        "api": "openai-completions",
        "apiKey": "test-key",
        "models": [{"id": "fast"}],
    }
    return make_agent({"models.json": json.dumps({"providers": {"fake": provider}})}, model="fake/fast")


async def leave_after_first_event(port: int, session: str, linger: float) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        body = json.dumps({"session": session, "text": "hi"}).encode()
        writer.write(
            b"POST /invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        await asyncio.wait_for(reader.readuntil(b"data: "), 15)
        await asyncio.sleep(linger)
    finally:
        writer.close()


async def settled_connections(pid: int, port: int, at_most: int, within: float = 10.0) -> int:
    """The established count once it is ``<= at_most`` (closes finish in the background), or the
    last count seen when ``within`` runs out."""
    deadline = time.monotonic() + within
    while True:
        count = established_connections(pid, port)
        if count <= at_most or time.monotonic() > deadline:
            return count
        await asyncio.sleep(0.1)


async def test_early_disconnects_leak_no_model_connection(make_agent: AgentFactory) -> None:
    jitter = random.Random(8)
    async with FakeOpenAI(record=False) as fake:
        # The first text at once, the rest of the answer a moment later: the turn's end and the
        # client's leaving land close together, sweeping the cancellation across the model
        # response's last read and its close, where it used to strand the connection.
        fake.answer_always(openai_reply(REPLY), burst_after=2, pause=lambda: jitter.uniform(0, 0.002))
        agent = fake_model_agent(make_agent, fake)
        async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
            port = await server.port()
            pid = server.process.pid
            assert pid is not None
            for i in range(DISCONNECTS):
                await leave_after_first_event(port, f"leaver-{i}", jitter.uniform(0, 0.003))
            # Zero leaked: at most the one idle keep-alive connection the pool may keep.
            assert await settled_connections(pid, fake.origin_port, at_most=1) <= 1
            events = await asyncio.wait_for(invoke(port, "after", "hello"), 30)
            assert answer(events) == REPLY
            assert await settled_connections(pid, fake.origin_port, at_most=1) <= 1
