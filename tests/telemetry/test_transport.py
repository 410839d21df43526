"""The sender thread: posts to a real OTLP/HTTP receiver on a kept-alive connection, reports a
dead collector as one ``(url, problem)`` without blocking the loop."""

from __future__ import annotations

import asyncio
import time

from fastagent_cli.telemetry.otlp import encode_spans
from fastagent_cli.telemetry.spans import Span
from fastagent_cli.telemetry.transport import Sender
from tests.serving.otlp_receiver import OtlpReceiver
from tests.serving.serving_proc import free_port


async def test_posts_arrive_and_a_dead_collector_is_a_problem_not_a_stall() -> None:
    span = Span(b"\x01" * 16, b"\x02" * 8, None, "s", 1, 1, 2)
    async with OtlpReceiver() as receiver:
        sender = Sender({"x-api-key": "k", "content-type": "text/plain"})
        for _ in range(2):
            job = sender.send(lambda: [(f"{receiver.url}/v1/traces", encode_spans({}, [span]))])
            assert await asyncio.wrap_future(job) is None
        assert [s.name for s in receiver.spans] == ["s", "s"]
        assert set(receiver.content_types) == {"application/x-protobuf"}
        dead = f"http://127.0.0.1:{free_port()}/v1/traces"
        started = time.monotonic()
        ticks = 0
        job = sender.send(lambda: [(dead, b"x")])
        while not job.done():
            ticks += 1
            await asyncio.sleep(0.001)
        url, problem = await asyncio.wrap_future(job) or ("", "")
        assert url == dead and problem and time.monotonic() - started < 3
        assert ticks > 0  # the loop kept running while the thread tried
        sender.close()
