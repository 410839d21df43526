"""``GET /control/sessions/{id}/events`` with several watchers of one session: one subscription fans
out to all of them, a watcher gets exactly what was published after it joined (``seq`` from 0),
one encoding serves watchers at the same point, and a watcher too far behind is ended alone."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
import pytest

from fastagent_cli.control import SessionEvent
from fastagent_cli.serving.control import fanout
from tests.serving.test_control_plane import AUTH, Plane, plane

__all__ = ["plane"]  # the fixture


async def follow(stream: aiohttp.ClientResponse, into: list[Any], until: str) -> None:
    async for raw in stream.content:
        line = raw.decode().rstrip("\n")
        if line.startswith("data: "):
            into.append(json.loads(line[6:]))
            if into[-1]["event"]["type"] == until:
                return


async def test_a_watcher_joining_mid_run_gets_what_follows_numbered_from_zero(plane: Plane) -> None:
    early: list[Any] = []
    late: list[Any] = []
    async with plane.http.get(plane.url("/sessions/j/events"), headers=AUTH) as first:
        watching = asyncio.create_task(follow(first, early, "run_settled"))
        running = asyncio.create_task(plane.invoke("j", "be slow"))
        for _ in range(500):  # the run is in its 30 s tool
            if any(m["event"]["type"] == "tool_started" for m in early):
                break
            await asyncio.sleep(0.02)
        seen_before = len(early)
        assert seen_before > 0
        async with plane.http.get(plane.url("/sessions/j/events"), headers=AUTH) as second:
            # the headers are out: the second watcher has joined
            assert (await plane.send("POST", "/sessions/j/actions", {"type": "abort"}))[1]["ok"] is True
            await asyncio.wait_for(follow(second, late, "run_settled"), 10)
        await asyncio.wait_for(watching, 10)
        await asyncio.wait_for(running, 10)
    assert [m["seq"] for m in early] == list(range(len(early)))
    assert [m["seq"] for m in late] == list(range(len(late)))  # from 0 on its own connection
    assert [m["event"] for m in late] == [m["event"] for m in early[seen_before:]]
    assert late[-1]["event"]["data"]["status"] == "aborted"


async def test_watchers_share_one_subscription_that_ends_with_the_last(plane: Plane) -> None:
    hub = plane.service.opened.agent.hub  # type: ignore[attr-defined]
    got: list[list[Any]] = [[], [], []]
    async with (
        plane.http.get(plane.url("/sessions/s/events"), headers=AUTH) as a,
        plane.http.get(plane.url("/sessions/s/events"), headers=AUTH) as b,
        plane.http.get(plane.url("/sessions/s/events"), headers=AUTH) as c,
    ):
        assert hub.watching("s") == 1
        await plane.invoke("s", "hi")
        await asyncio.wait_for(
            asyncio.gather(*(follow(r, into, "run_settled") for r, into in zip((a, b, c), got, strict=True))),
            10,
        )
    assert got[0] == got[1] == got[2] and got[0][-1]["event"]["type"] == "run_settled"
    for _ in range(500):  # the server notices the clients left
        if hub.watching("s") == 0:
            break
        await asyncio.sleep(0.02)
    assert hub.watching("s") == 0


class Stream:
    """What a channel needs of a subscription, fed by hand."""

    pending = 0

    def drain(self) -> list[SessionEvent]:
        return []


class Request:
    transport = None


async def test_one_encoding_per_point_and_a_watcher_too_far_behind_ends_alone(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(fanout, "SUBSCRIBER_BUFFER_CAP", 5)
    channel = fanout._Channel("s", Stream(), "epoch-1")  # type: ignore[arg-type]
    keeping_up = channel.join(Request(), 0.0)  # type: ignore[arg-type]
    lagging = channel.join(Request(), 0.0)  # type: ignore[arg-type]
    burst = [SessionEvent("message_delta", {"delta": str(i)}) for i in range(3)]
    await channel.deliver(burst, 0)
    assert keeping_up.outbox[0] is lagging.outbox[0]  # encoded once
    text = keeping_up.outbox[0].decode()
    assert text.startswith("data: ") and text.endswith("\n\n") and text.count("\n\ndata: ") == 2
    assert [json.loads(m[6:])["seq"] for m in text.strip().split("\n\n")] == [0, 1, 2]
    keeping_up.outbox.clear()
    keeping_up.queued = 0  # written
    joined = channel.join(Request(), 0.0)  # type: ignore[arg-type]
    joined.start = 4  # joined after the next burst's first event
    with caplog.at_level(logging.WARNING, "fastagent.control"):
        await channel.deliver([SessionEvent("message_delta", {"delta": str(i)}) for i in (3, 4, 5)], 3)
    assert lagging.failed is False and len(lagging.outbox) == 1  # ended: 6 queued > 5
    assert "events behind" in caplog.text
    assert keeping_up.failed is None and keeping_up.seq == 6
    late = joined.outbox[0].decode().strip().split("\n\n")
    assert [(json.loads(m[6:])["seq"], json.loads(m[6:])["event"]["data"]) for m in late] == [
        (0, {"delta": "4"}),
        (1, {"delta": "5"}),
    ]
