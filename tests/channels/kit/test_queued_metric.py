"""``fastagent.channel.queued_turns``: up when a turn queues behind another of its session, down
when it runs or the runner closes (telemetry on: a metrics recorder installed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fastagent_cli.channels.kit.lifecycle import QueuedNotices
from fastagent_cli.telemetry import metrics


@pytest.fixture
def recorder() -> Iterator[metrics.Metrics]:
    made = metrics.Metrics()
    metrics.install(made)
    yield made
    metrics.install(None)


def queued(recorder: metrics.Metrics) -> float:
    return recorder.sums.get(("fastagent.channel.queued_turns", ()), 0.0)


async def notice() -> str:
    return "queued"


async def test_queued_turns_go_up_and_down(recorder: metrics.Metrics) -> None:
    notices: QueuedNotices[str] = QueuedNotices()
    notices.post("t1", notice())
    notices.post("t2", notice())
    notices.post("t2", notice())  # the same turn's notice again: still one turn
    assert queued(recorder) == 2
    task = notices.take("t1")
    assert task is not None and await task == "queued"
    assert notices.take("nothing") is None
    assert queued(recorder) == 1
    await notices.aclose()
    assert queued(recorder) == 0
