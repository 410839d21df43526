"""The real ``fastagent start`` on an HTTPS model (a trustme CA named by the provider's
``caFile``): clients that leave right after the first event leak no TLS connection to the model,
and 100 sessions at once all complete."""

from __future__ import annotations

import asyncio
import json
import random
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from tests.conftest import AgentFactory
from tests.fakes.fake_providers import FakeOpenAI, openai_reply
from tests.serving.serving_proc import ServerProcess, answer, invoke
from tests.serving.test_model_connections import leave_after_first_event, settled_connections

pytestmark = pytest.mark.slow

REPLY = "Hello there, this answer streams over TLS."


@pytest.fixture
def tls(tmp_path: Path) -> Iterator[tuple[ssl.SSLContext, Path]]:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    yield context, ca_file


def tls_agent(make_agent: AgentFactory, fake: FakeOpenAI, ca_file: Path) -> Path:
    provider = {
        "baseUrl": fake.base_url,
        "api": "openai-completions",
        "apiKey": "test-key",
        "caFile": str(ca_file),
        "models": [{"id": "fast"}],
    }
    return make_agent({"models.json": json.dumps({"providers": {"fake": provider}})}, model="fake/fast")


async def test_early_disconnects_leak_no_tls_model_connection(
    make_agent: AgentFactory, tls: tuple[ssl.SSLContext, Path]
) -> None:
    context, ca_file = tls
    jitter = random.Random(29)
    async with FakeOpenAI(record=False, tls=context) as fake:
        fake.answer_always(openai_reply(REPLY), burst_after=2, pause=lambda: jitter.uniform(0, 0.002))
        agent = tls_agent(make_agent, fake, ca_file)
        async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
            port = await server.port()
            pid = server.process.pid
            assert pid is not None
            for i in range(200):
                await leave_after_first_event(port, f"leaver-{i}", jitter.uniform(0, 0.003))
            assert await settled_connections(pid, fake.origin_port, at_most=1) <= 1
            events = await asyncio.wait_for(invoke(port, "after", "hello"), 30)
            assert answer(events) == REPLY
            assert await settled_connections(pid, fake.origin_port, at_most=1) <= 1


async def test_one_hundred_sessions_at_once_over_tls(
    make_agent: AgentFactory, tls: tuple[ssl.SSLContext, Path]
) -> None:
    context, ca_file = tls
    async with FakeOpenAI(record=False, tls=context) as fake:
        fake.answer_always(openai_reply(REPLY))
        agent = tls_agent(make_agent, fake, ca_file)
        async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
            port = await server.port()
            results = await asyncio.wait_for(
                asyncio.gather(*(invoke(port, f"s{i}", "hi") for i in range(100))), 120
            )
    assert [answer(events) for events in results] == [REPLY] * 100
