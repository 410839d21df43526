"""Our remote client against a serve with only the TypeScript original 0.18's route set: a raw
aiohttp app on 127.0.0.1 answering in the shapes ``src/session.ts`` declares (counts-only
``pending``, ``state_changed`` with the changed fields, no ``routes``/``updatable`` in its
capabilities) and, like the original, holding an event stream's headers back until its first
event or ping. Then the same client, told to use that set, against our real serve."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from fastagent_cli.contract import Prompt
from fastagent_cli.control import SessionUpdate
from fastagent_cli.remote import DISPATCH, RemoteSessionsUnavailable, connect_session_control
from fastagent_cli.remote.control import RemoteSessionControl
from fastagent_cli.remote.endpoint import ControlEndpoint
from fastagent_cli.remote.routes import PROBE_SESSION, RouteSet

# The original 0.18's capabilities: no `routes`, no `updatable`, `usage: false`.
CAPABILITIES = {
    "steering": True,
    "followUp": True,
    "manualCompaction": True,
    "modelSelection": {"allowedModels": ["anthropic/claude-sonnet-4-5"]},
    "thinkingLevel": True,
    "navigate": True,
    "toolProgress": True,
    "usage": False,
}
STATE = {
    "status": "running",
    "activeRunId": "r-1",
    "model": "anthropic/claude-sonnet-4-5",
    "thinkingLevel": "medium",
    "availableThinkingLevels": ["off", "minimal", "low", "medium", "high"],
    "pending": {"steering": 2, "followUp": 1},
    "leafEntryId": "e2",
}
ENTRIES = {
    "entries": [
        {"id": "e1", "timestamp": 1, "kind": "user", "data": {"text": "hi"}},
        {"id": "e2", "parentId": "e1", "timestamp": 2, "kind": "assistant", "data": {"text": "yo"}},
    ],
    "leafEntryId": "e2",
}
EVENTS = [
    {"type": "queue_changed", "timestamp": 3, "runId": "r-1", "data": {"steering": 0, "followUp": 0}},
    {"type": "run_settled", "timestamp": 4, "runId": "r-1", "data": {"status": "aborted"}},
    {"type": "state_changed", "timestamp": 5, "data": {"thinkingLevel": "high"}},
]


class Original:
    """The 0.18 route set: ``GET /control/capabilities|state|entries|events`` and ``POST
    /control/dispatch``; nothing under ``/control/sessions``."""

    def __init__(self, hold_headers_s: float) -> None:
        self.hold_headers_s = hold_headers_s
        self.dispatched: list[Any] = []
        self.reads: list[tuple[str, dict[str, str]]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/control/capabilities", self._capabilities)
        app.router.add_get("/control/state", self._state)
        app.router.add_get("/control/entries", self._entries)
        app.router.add_get("/control/events", self._events)
        app.router.add_post("/control/dispatch", self._dispatch)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]

    async def close(self) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _capabilities(self, request: web.Request) -> web.Response:
        return web.json_response(CAPABILITIES)

    async def _state(self, request: web.Request) -> web.Response:
        self.reads.append(("state", dict(request.query)))
        return web.json_response(STATE)

    async def _entries(self, request: web.Request) -> web.Response:
        self.reads.append(("entries", dict(request.query)))
        return web.json_response(ENTRIES)

    async def _events(self, request: web.Request) -> web.StreamResponse:
        self.reads.append(("events", dict(request.query)))
        await asyncio.sleep(self.hold_headers_s)  # the headers go out with the first event
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for seq, event in enumerate(EVENTS):
            wire = {"sessionId": request.query["session"], "epoch": "ep", "seq": seq, "event": event}
            await response.write(f"data: {json.dumps(wire)}\n\n".encode())
        await asyncio.sleep(30)
        return response

    async def _dispatch(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.dispatched.append(body)
        if body["command"]["type"] == "set_thinking" and body["command"]["level"] == "max":
            error = {"code": "invalid_command", "message": 'unknown thinking level "max"', "retryable": False}
            return web.json_response({"ok": False, "error": error})
        if body["command"]["type"] in ("steer", "follow_up", "abort"):
            return web.json_response({"ok": True, "runId": "r-1"})
        return web.json_response({"ok": True})


@pytest.fixture
async def original() -> AsyncIterator[Original]:
    served = Original(hold_headers_s=0.6)
    await served.start()
    yield served
    await served.close()


async def test_the_client_finds_the_dispatch_set_and_reads_counts_only(original: Original) -> None:
    control = await connect_session_control(original.url, "t")
    try:
        assert control.routes.name == DISPATCH
        assert original.reads == [("state", {"session": PROBE_SESSION})]  # the one probe
        capabilities = await control.capabilities()
        assert capabilities.updatable == ("model", "thinkingLevel", "leafEntryId")
        session = control.sessions.get("tg:-100/x")
        state = await session.state()
        assert (state.pending.steering_count, state.pending.follow_up_count) == (2, 1)
        assert state.pending.labels() == (("(queued prompt)",) * 2, ("(queued prompt)",))
        entries = await session.entries(since="e1")
        assert [e.id for e in entries.entries] == ["e1", "e2"] and entries.leaf_entry_id == "e2"
        assert original.reads[1:] == [
            ("state", {"session": "tg:-100/x"}),
            ("entries", {"session": "tg:-100/x", "since": "e1"}),
        ]
    finally:
        await control.aclose()


async def test_commands_and_updates_go_through_dispatch(original: Original) -> None:
    control = await connect_session_control(original.url, "t")
    session = control.sessions.get("s1")
    try:
        assert (await session.steer(Prompt("hurry"))).run_id == "r-1"
        assert (await session.follow_up(Prompt("then"))).ok
        assert (await session.abort()).ok and (await session.compact("keep it")).ok
        ok = await session.update(SessionUpdate(model="anthropic/claude-sonnet-4-5", thinking_level="high"))
        assert ok.ok
        assert (await session.update(SessionUpdate(leaf_entry_id="e1"))).ok
        partial = await session.update(
            SessionUpdate(model="anthropic/claude-sonnet-4-5", thinking_level="max")
        )
        assert partial.error is not None and partial.error.code == "partial_update"
        assert "wrote model" in partial.error.message
        named = await session.update(SessionUpdate(name="Deploy"))
        assert named.error is not None and named.error.code == "unsupported_capability"
        for refused in (await session.delete(), await control.sessions.fork("s1", "e1", "s2")):
            assert refused.error is not None and refused.error.code == "unsupported_capability"
        with pytest.raises(RemoteSessionsUnavailable):
            await control.sessions.list()
    finally:
        await control.aclose()
    assert [(b["session"], b["command"]) for b in original.dispatched] == [
        ("s1", {"type": "steer", "prompt": {"text": "hurry"}}),
        ("s1", {"type": "follow_up", "prompt": {"text": "then"}}),
        ("s1", {"type": "abort"}),
        ("s1", {"type": "compact", "instructions": "keep it"}),
        ("s1", {"type": "set_model", "model": "anthropic/claude-sonnet-4-5"}),
        ("s1", {"type": "set_thinking", "level": "high"}),
        ("s1", {"type": "navigate", "targetId": "e1"}),
        ("s1", {"type": "set_model", "model": "anthropic/claude-sonnet-4-5"}),
        ("s1", {"type": "set_thinking", "level": "max"}),
    ]


async def test_event_stream_headers_may_come_late_up_to_the_heartbeat_window(original: Original) -> None:
    # Reads must answer in 0.2 s, but the stream's headers may take three heartbeats (0.9 s): the
    # server holds them back 0.6 s, as the original does until its first event or 30 s ping.
    control = await connect_session_control(original.url, "t", heartbeat_s=0.3, request_timeout_s=0.2)
    try:
        async with control.sessions.get("s1").events() as stream:
            await asyncio.wait_for(stream.ready(), 5)
            got = [await asyncio.wait_for(anext(aiter(stream)), 5) for _ in EVENTS]
        assert [e.type for e in got] == ["queue_changed", "run_settled", "state_changed"]
        assert got[0].data == {"steering": 0, "followUp": 0}
        assert got[2].data == {"thinkingLevel": "high"}
        assert original.reads[-1] == ("events", {"session": "s1"})
    finally:
        await control.aclose()
    original.hold_headers_s = 2.0  # past the window: a dead connection, said so
    control = await connect_session_control(original.url, "t", heartbeat_s=0.3, request_timeout_s=0.2)
    try:
        stream = control.sessions.get("s1").events()
        with pytest.raises(Exception, match="no answer .* within 0.9 s"):
            await asyncio.wait_for(stream.ready(), 5)
        await stream.aclose()
    finally:
        await control.aclose()


async def test_the_dispatch_set_of_our_serve_through_the_client(make_agent: Any, monkeypatch: Any) -> None:
    from fastagent_cli.serving.host import serve
    from fastagent_cli.serving.service import create_agent_service

    monkeypatch.setenv("FASTAGENT_CONTROL_TOKEN", "tok")
    agent_dir = make_agent({}, config="session_control = true\ncoding_tools = false\n")
    service = await create_agent_service(agent_dir)
    server = serve(service.handler, port=0, host="127.0.0.1")
    port = await server.listening
    url = f"http://127.0.0.1:{port}"
    try:
        detected = await connect_session_control(url, "tok")
        assert detected.routes.name == "sessions"  # ours names both; the spec's set is preferred
        capabilities = await detected.capabilities()
        await detected.aclose()
        endpoint = ControlEndpoint(url, "tok")
        control = RemoteSessionControl(endpoint, capabilities, RouteSet(DISPATCH))
        session = control.sessions.get("a:b/c")
        async with session.events() as stream:
            await stream.ready()
            async for _ in service.opened.agent.invoke("a:b/c", "hi"):
                pass
            kinds = []
            async for event in stream:
                kinds.append(event.type)
                if event.type == "run_settled":
                    break
        assert kinds[0] == "run_started" and kinds[-1] == "run_settled"
        state = await session.state()
        assert state.status == "idle" and state.pending.steering_count == 0
        entries = await session.entries()
        assert [e.kind for e in entries.entries] == ["user", "assistant"]
        assert (await session.update(SessionUpdate(thinking_level="high"))).ok
        assert (await session.state()).thinking_level == "high"
        assert (await session.abort()).error.code == "no_active_run"  # type: ignore[union-attr]
        await control.aclose()
    finally:
        await server.close()
        await service.close()
