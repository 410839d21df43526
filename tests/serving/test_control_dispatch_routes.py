"""The TypeScript original 0.18's ``/control`` route set on our serve (the real aiohttp host, the
same hub and token as the spec's set): ``state|entries|events?session=`` and every command of
``POST /control/dispatch``, each answer checked against the original's declared shapes
(``src/session.ts``: ``SessionState``, ``SessionEntries``, ``SessionResult``, ``WireEvent``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import quote

import pytest

from tests.serving import test_control_plane
from tests.serving.test_control_plane import AUTH, Plane

plane = pytest.fixture(test_control_plane.plane.__wrapped__, name="plane")  # type: ignore[attr-defined]

STATUSES = {"idle", "running", "compacting"}


def assert_session_state(state: Any) -> None:
    """``SessionState`` as 0.18 declares it: a status, optional strings, and ``pending`` as the
    counts ``{steering: number, followUp: number}`` a client does arithmetic on."""
    assert state["status"] in STATUSES
    for key in ("activeRunId", "model", "thinkingLevel", "leafEntryId"):
        assert key not in state or isinstance(state[key], str)
    pending = state["pending"]
    assert type(pending["steering"]) is int and type(pending["followUp"]) is int
    assert pending["steering"] + pending["followUp"] >= 0


def assert_entries(answer: Any) -> None:
    assert isinstance(answer["entries"], list)
    for entry in answer["entries"]:
        assert isinstance(entry["id"], str) and isinstance(entry["kind"], str)
        assert isinstance(entry["timestamp"], int) and isinstance(entry["data"], dict)


def assert_result(result: Any) -> None:
    """``SessionResult``: ``{ok: true, runId?}`` or ``{ok: false, error: {code, message, retryable}}``."""
    if result["ok"] is True:
        assert set(result) <= {"ok", "runId"}
    else:
        assert set(result) == {"ok", "error"}
        error = result["error"]
        assert isinstance(error["code"], str) and isinstance(error["message"], str)
        assert isinstance(error["retryable"], bool)


async def dispatch(plane: Plane, session: str, command: Any) -> Any:
    status, body = await plane.send("POST", "/dispatch", {"session": session, "command": command})
    assert status == 200, body
    assert_result(body)
    return body


async def watch(plane: Plane, session: str, until: str, sink: list[Any], ready: asyncio.Event) -> None:
    async with plane.http.get(plane.url("/events"), params={"session": session}, headers=AUTH) as stream:
        assert stream.status == 200 and stream.headers["Content-Type"].startswith("text/event-stream")
        ready.set()
        async for raw in stream.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("data: "):
                wire = json.loads(line[6:])
                assert set(wire) == {"sessionId", "epoch", "seq", "event"} and wire["seq"] == len(sink)
                sink.append(wire["event"])
                if wire["event"]["type"] == until:
                    return


async def test_the_query_routes_read_what_the_resource_routes_read(plane: Plane) -> None:
    session = "tg:-1001234567890/thread"
    capabilities = await plane.get("/capabilities")
    assert capabilities["routes"] == ["sessions", "dispatch"]
    idle = await plane.get("/state", params={"session": session})
    assert_session_state(idle)
    assert idle["pending"] == {"steering": 0, "followUp": 0, "steeringTexts": [], "followUpTexts": []}
    await plane.invoke(session, "hi")
    encoded = quote(session, safe="")
    state = await plane.get("/state", params={"session": session})
    assert state == await plane.get(f"/sessions/{encoded}")
    entries = await plane.get("/entries", params={"session": session})
    assert_entries(entries)
    assert entries == await plane.get(f"/sessions/{encoded}/entries")
    first = entries["entries"][0]["id"]
    since = await plane.get("/entries", params={"session": session, "since": first})
    assert [e["kind"] for e in since["entries"]] == ["assistant"]
    for path in ("/state", "/entries", "/events"):
        assert await plane.send("GET", path) == (400, "missing ?session\n")
    async with plane.http.get(plane.url("/state"), params={"session": "x"}) as resp:
        assert resp.status == 401  # the same token guards both sets


async def test_dispatch_answers_malformed_bodies_as_the_original(plane: Plane) -> None:
    usage = (400, "expected { session: string, command: SessionCommand }\n")
    assert await plane.send("POST", "/dispatch", {"command": {"type": "abort"}}) == usage
    assert await plane.send("POST", "/dispatch", {"session": 5, "command": {"type": "abort"}}) == usage
    assert await plane.send("POST", "/dispatch", "{nope") == (400, "invalid JSON\n")
    malformed = {
        "ok": False,
        "error": {"code": "invalid_command", "message": "malformed command", "retryable": False},
    }
    for command in (
        None,
        {"type": "dance"},
        {"type": "steer", "prompt": {"text": 5}},
        {"type": "set_model"},
        {"type": "set_thinking", "level": 3},
        {"type": "navigate", "targetId": None},
        {"type": "compact", "instructions": 1},
    ):
        assert await dispatch(plane, "m", command) == malformed
    no_run = await dispatch(plane, "m", {"type": "abort"})
    assert no_run["error"]["code"] == "no_active_run" and no_run["error"]["retryable"] is False


async def test_every_command_over_dispatch_with_counts_and_the_drop_before_the_settle(plane: Plane) -> None:
    session = "d"
    events: list[Any] = []
    ready = asyncio.Event()
    watcher = asyncio.create_task(watch(plane, session, "run_settled", events, ready))
    await asyncio.wait_for(ready.wait(), 10)
    running = asyncio.create_task(plane.invoke(session, "be slow"))
    for _ in range(500):
        if (await plane.get("/state", params={"session": session}))["status"] == "running":
            break
        await asyncio.sleep(0.02)
    state = await plane.get("/state", params={"session": session})
    run_id = state["activeRunId"]
    assert await dispatch(plane, session, {"type": "steer", "prompt": {"text": "hurry"}}) == {
        "ok": True,
        "runId": run_id,
    }
    assert await dispatch(plane, session, {"type": "follow_up", "prompt": {"text": "then sum up"}}) == {
        "ok": True,
        "runId": run_id,
    }
    state = await plane.get("/state", params={"session": session})
    assert_session_state(state)
    assert (state["pending"]["steering"], state["pending"]["followUp"]) == (1, 1)
    busy = await dispatch(plane, session, {"type": "compact"})
    assert busy["error"]["code"] == "session_busy"
    assert await dispatch(plane, session, {"type": "abort"}) == {"ok": True, "runId": run_id}
    await asyncio.wait_for(running, 10)
    await asyncio.wait_for(watcher, 10)
    queues = [(e["data"]["steering"], e["data"]["followUp"]) for e in events if e["type"] == "queue_changed"]
    assert queues == [(1, 0), (1, 1), (0, 0)]
    assert [e["type"] for e in events[-2:]] == ["queue_changed", "run_settled"]  # emptied first
    assert events[-1]["data"]["status"] == "aborted"
    finished = next(e["data"] for e in events if e["type"] == "tool_finished")
    result = finished["content"]  # the original's {content: [blocks], details?}
    assert finished["isError"] is True and set(result) == {"content"}
    assert result["content"][0]["type"] == "text" and result["content"][0]["text"] == "Operation aborted"
    assert (await plane.get("/state", params={"session": session}))["pending"]["steering"] == 0


async def test_boundary_commands_over_dispatch_report_the_changed_fields(plane: Plane) -> None:
    session = "b"
    await plane.invoke(session, "hi")
    await plane.invoke(session, "again")
    entries = (await plane.get("/entries", params={"session": session}))["entries"]
    events: list[Any] = []
    ready = asyncio.Event()
    watcher = asyncio.create_task(watch(plane, session, "never", events, ready))
    await asyncio.wait_for(ready.wait(), 10)
    try:
        assert await dispatch(plane, session, {"type": "set_thinking", "level": "high"}) == {"ok": True}
        assert await dispatch(plane, session, {"type": "set_model", "model": "openai/gpt-4.1-mini"}) == {
            "ok": True
        }
        unknown = await dispatch(plane, session, {"type": "set_model", "model": "nope/none"})
        assert unknown["error"]["code"] == "invalid_command"
        target = entries[1]["id"]  # the first answer: the branch point
        assert await dispatch(plane, session, {"type": "navigate", "targetId": target}) == {"ok": True}
        missing = await dispatch(plane, "ghost", {"type": "set_thinking", "level": "low"})
        assert missing["error"]["code"] == "no_such_session"
        for _ in range(200):
            if len([e for e in events if e["type"] == "state_changed"]) == 3:
                break
            await asyncio.sleep(0.02)
    finally:
        watcher.cancel()
    changed = [e["data"] for e in events if e["type"] == "state_changed"]
    assert changed[0] == {"thinkingLevel": "high"}
    assert set(changed[1]) == {"model", "thinkingLevel"} and changed[1]["model"] == "openai/gpt-4.1-mini"
    assert changed[2]["leafEntryId"] == target and set(changed[2]) == {
        "leafEntryId",
        "model",
        "thinkingLevel",
    }
    state = await plane.get("/state", params={"session": session})
    assert state["leafEntryId"] == target
