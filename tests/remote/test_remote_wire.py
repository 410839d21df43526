"""The remote clients against servers that misbehave on purpose (raw aiohttp apps on 127.0.0.1):
a ``seq`` gap, a message that is not an envelope, a connection cut mid-stream, silence (the
watchdog), a black hole (the request deadlines), an answer that is not an event stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from fastagent_cli.contract import Failed, Text
from fastagent_cli.control import Capabilities, SessionEventsClosed
from fastagent_cli.errors import ControlRequestError
from fastagent_cli.remote import RemoteSessionControl, connect_agent, endpoint
from fastagent_cli.remote.control import RemoteSessions
from fastagent_cli.remote.endpoint import ControlEndpoint

CAPABILITIES = {"steering": True, "followUp": True}
Script = Callable[[web.StreamResponse], Awaitable[None]]


def envelope(seq: int, kind: str = "run_started", session: str = "s1", epoch: str = "e-1") -> bytes:
    event = {"type": kind, "timestamp": 1, "runId": "r", "data": {}}
    return (
        f"data: {json.dumps({'sessionId': session, 'epoch': epoch, 'seq': seq, 'event': event})}\n\n".encode()
    )


class FakeServe:
    """Answers ``/control/sessions/s1/events`` and ``/control/invoke`` with a scripted SSE body."""

    def __init__(self) -> None:
        self.script: Script | None = None
        self.hang = asyncio.Event()  # never set: the black hole
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/control/capabilities", self._capabilities)
        app.router.add_get("/control/sessions/s1/events", self._stream)
        app.router.add_post("/control/invoke", self._stream)
        app.router.add_get("/control/sessions/s1", self._black_hole)
        app.router.add_get("/control/sessions/s1/entries", self._black_hole)
        app.router.add_get("/control/sessions/plain/events", self._plain)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _capabilities(self, request: web.Request) -> web.Response:
        return web.json_response(CAPABILITIES)

    async def _black_hole(self, request: web.Request) -> web.Response:
        await self.hang.wait()
        return web.json_response({})

    async def _plain(self, request: web.Request) -> web.Response:
        return web.Response(text="hello")

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        assert self.script is not None
        await self.script(response)
        return response


@pytest.fixture
async def fake() -> AsyncIterator[FakeServe]:
    served = FakeServe()
    await served.start()
    try:
        yield served
    finally:
        await served.close()


async def connect(fake: FakeServe, heartbeat_s: float = 30.0) -> RemoteSessionControl:
    return RemoteSessionControl(ControlEndpoint(fake.url, "t", heartbeat_s=heartbeat_s), Capabilities())


async def drain(stream: AsyncIterator[object]) -> tuple[list[object], BaseException | None]:
    got: list[object] = []
    try:
        async for event in stream:
            got.append(event)
    except Exception as exc:
        return got, exc
    return got, None


async def test_a_seq_gap_raises_after_the_events_before_it(fake: FakeServe) -> None:
    async def script(response: web.StreamResponse) -> None:
        await response.write(envelope(0) + envelope(1, "user_message") + envelope(3, "message_started"))
        await asyncio.sleep(5)

    fake.script = script
    control = await connect(fake)
    stream = control.sessions.get("s1").events()
    got, error = await asyncio.wait_for(drain(stream), 10)
    assert [e.type for e in got] == ["run_started", "user_message"]  # type: ignore[attr-defined]
    assert isinstance(error, SessionEventsClosed) and error.reason == "gap"
    assert "expected seq 2, got 3" in str(error)
    await stream.aclose()
    await control.aclose()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"data: not json\n\n", "not JSON"),
        (b'data: {"seq": 0}\n\n', "not {sessionId, epoch, seq, event}"),
        (b'data: {"sessionId": "s1", "epoch": "e", "seq": "0", "event": {}}\n\n', "not {sessionId"),
        (envelope(0, session="other"), "of session 'other'"),
        (envelope(0) + envelope(1, epoch="e-2"), "epoch changed"),
        (b'data: {"sessionId": "s1", "epoch": "e", "seq": 0, "event": {"type": 1}}\n\n', "malformed event"),
    ],
)
async def test_a_message_that_is_not_an_envelope_raises(fake: FakeServe, body: bytes, problem: str) -> None:
    async def script(response: web.StreamResponse) -> None:
        await response.write(body)
        await asyncio.sleep(5)

    fake.script = script
    control = await connect(fake)
    stream = control.sessions.get("s1").events()
    _, error = await asyncio.wait_for(drain(stream), 10)
    assert isinstance(error, SessionEventsClosed) and error.reason == "protocol" and problem in str(error)
    await stream.aclose()
    await control.aclose()


async def test_a_connection_cut_mid_stream_raises(fake: FakeServe) -> None:
    async def script(response: web.StreamResponse) -> None:
        await response.write(envelope(0))
        await asyncio.sleep(0.1)
        assert response._req is not None and response._req.transport is not None  # type: ignore[attr-defined]
        response._req.transport.abort()  # type: ignore[attr-defined]

    fake.script = script
    control = await connect(fake)
    stream = control.sessions.get("s1").events()
    got, error = await asyncio.wait_for(drain(stream), 10)
    assert len(got) == 1
    assert isinstance(error, SessionEventsClosed) and error.reason == "disconnected"
    await control.aclose()


async def test_a_clean_end_by_the_server_raises(fake: FakeServe) -> None:
    async def script(response: web.StreamResponse) -> None:
        await response.write(envelope(0) + b": ping\n\n")
        await response.write_eof()

    fake.script = script
    control = await connect(fake)
    got, error = await asyncio.wait_for(drain(control.sessions.get("s1").events()), 10)
    assert len(got) == 1 and isinstance(error, SessionEventsClosed) and error.reason == "ended"
    await control.aclose()


async def test_the_watchdog_gives_up_after_three_missed_heartbeats(fake: FakeServe) -> None:
    async def script(response: web.StreamResponse) -> None:
        for _ in range(8):  # pings keep a quiet stream alive...
            await response.write(b": ping\n\n")
            await asyncio.sleep(0.1)
        await response.write(envelope(0))
        await asyncio.sleep(30)  # ...then silence

    fake.script = script
    control = await connect(fake, heartbeat_s=0.2)
    stream = control.sessions.get("s1").events()
    loop = asyncio.get_running_loop()
    await stream.ready()
    start = loop.time()
    got, error = await asyncio.wait_for(drain(stream), 10)
    elapsed = loop.time() - start
    assert len(got) == 1  # delivered after 0.8 s of pings only
    assert isinstance(error, SessionEventsClosed) and error.reason == "idle" and "0.6 s" in str(error)
    assert elapsed >= 0.8 + 0.6 - 0.05
    await control.aclose()


async def test_reads_and_stream_opening_have_deadlines(
    fake: FakeServe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(endpoint, "REQUEST_TIMEOUT_S", 0.3)
    monkeypatch.setattr(endpoint, "PAYLOAD_TIMEOUT_S", 0.6)
    control = await connect(fake)
    session = control.sessions.get("s1")
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(ControlRequestError) as state:
        await session.state()
    assert state.value.status is None and "within 0.3 s" in state.value.message
    assert 0.25 < loop.time() - start < 3
    with pytest.raises(ControlRequestError) as entries:
        await session.entries()
    assert "within 0.6 s" in entries.value.message

    async def never(response: web.StreamResponse) -> None:
        await asyncio.sleep(30)

    fake.script = never  # headers go out, so opening succeeds; no headers is the black hole below
    stream = control.sessions.get("plain").events()
    with pytest.raises(ControlRequestError) as plain:
        await stream.ready()
    assert "not an event stream" in plain.value.message and plain.value.status == 200
    await stream.aclose()
    await control.aclose()


async def test_opening_a_stream_against_a_black_hole_times_out() -> None:
    # No headers within three heartbeats (0.3 s here) is a black hole, as no bytes on an open one.

    writers: list[asyncio.StreamWriter] = []

    async def accept_and_say_nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)

    server = await asyncio.start_server(accept_and_say_nothing, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        hole = ControlEndpoint(f"http://127.0.0.1:{port}", "t", heartbeat_s=0.1)
        stream = RemoteSessions(hole).get("s1").events()
        with pytest.raises(ControlRequestError) as failed:
            await asyncio.wait_for(stream.ready(), 5)
        assert failed.value.status is None and "no answer" in failed.value.message
        await stream.aclose()
        await hole.aclose()
    finally:
        for writer in writers:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_remote_invoke_turns_every_failure_into_one_failed_event(fake: FakeServe) -> None:
    async def no_terminal(response: web.StreamResponse) -> None:
        await response.write(b'data: {"type": "text", "delta": "hi"}\n\n')
        await response.write_eof()

    fake.script = no_terminal
    agent = connect_agent(fake.url, "t")
    events = [e async for e in agent.invoke("s1", "x")]
    assert events[0] == Text("hi") and isinstance(events[1], Failed) and events[1].retryable
    assert "without a terminal" in events[1].details

    async def malformed(response: web.StreamResponse) -> None:
        await response.write(b'data: {"type": "text"}\n\n')
        await asyncio.sleep(5)

    fake.script = malformed
    events = [e async for e in agent.invoke("s1", "x")]
    assert len(events) == 1 and isinstance(events[0], Failed) and "malformed event" in events[0].details

    async def cut(response: web.StreamResponse) -> None:
        await response.write(b'data: {"type": "text", "delta": "a"}\n\n')
        await asyncio.sleep(0.1)
        response._req.transport.abort()  # type: ignore[attr-defined,union-attr]

    fake.script = cut
    events = [e async for e in agent.invoke("s1", "x")]
    assert isinstance(events[-1], Failed) and events[-1].retryable and "connection" in events[-1].details
    await agent.aclose()
