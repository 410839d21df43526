"""``POST /invoke`` over the real host: every status, the SSE shape, pings, busy sessions."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path

import aiohttp
import pytest

from fastagent_cli.contract import Completed, Failed, Scope, Text, ToolEnded, ToolStarted
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.serving import sse
from fastagent_cli.serving.body import MAX_BODY_BYTES
from fastagent_cli.serving.invoke_http import create_invoke_handler
from fastagent_cli.serving.router import build_router
from tests.serving.conftest import FakeAgent, SlowTool, StartServer, real_agent, slow_tool_script, sse_events

JSON = {"Content-Type": "application/json"}


async def test_a_turn_streams_as_sse_with_the_standard_headers(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    agent = FakeAgent([Text("Hel"), Text("lo"), Completed({"n": 1})])
    base = await start_server(create_invoke_handler(agent))
    async with http.post(f"{base}/invoke", json={"session": "s1", "text": "hi"}) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "text/event-stream"
        assert resp.headers["Cache-Control"] == "no-cache"
        assert resp.headers["Connection"] == "keep-alive"
        body = await resp.text()
    assert body == 'data: {"type":"text","delta":"Hel"}\n\ndata: {"type":"text","delta":"lo"}\n\n' + (
        'data: {"type":"completed","data":{"n":1}}\n\n'
    )
    scope, prompt = agent.calls[0]
    assert scope == Scope("s1") and prompt.text == "hi"


async def test_parent_session_and_branch_hints_reach_the_agent(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    agent = FakeAgent([Completed()])
    base = await start_server(create_invoke_handler(agent))
    body = {"session": "t", "text": "x", "parentSession": "chan", "branchHints": ["a", "b"]}
    async with http.post(f"{base}/invoke", json=body) as resp:
        assert sse_events(await resp.text()) == [Completed()]
    assert agent.calls[0][0] == Scope("t", "chan", ("a", "b"))


async def test_a_real_engine_turn_with_a_tool(
    tmp_path: Path, start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    slow = SlowTool(seconds=0.01)
    agent = real_agent(tmp_path, slow_tool_script(), [slow.build()])
    try:
        base = await start_server(build_router({"/invoke": create_invoke_handler(agent)}))
        async with http.post(f"{base}/invoke", json={"session": "r", "text": "be slow"}) as resp:
            events = sse_events(await resp.text())
    finally:
        await agent.aclose()
    kinds = [type(e) for e in events]
    assert kinds == [ToolStarted, ToolEnded, Text, Completed]
    assert isinstance(events[1], ToolEnded) and not events[1].is_error
    assert isinstance(events[2], Text) and events[2].delta == "finished"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "invalid json\n"),
        (b"\xff\xfe\x00", "invalid json\n"),
        (b"", "invalid json\n"),
        (b"[1, 2]", 'need { "session": string, "text": string }\n'),
        (b'{"text": "hi"}', 'need { "session": string, "text": string }\n'),
        (b'{"session": "s"}', 'need { "session": string, "text": string }\n'),
        (b'{"session": 1, "text": "hi"}', 'need { "session": string, "text": string }\n'),
        (b'{"session": "s", "text": ["hi"]}', 'need { "session": string, "text": string }\n'),
        (b'{"session": "s", "text": "hi", "parentSession": 7}', '"parentSession" must be a string\n'),
        (
            b'{"session": "s", "text": "hi", "branchHints": "a"}',
            '"branchHints" must be an array of strings\n',
        ),
        (
            b'{"session": "s", "text": "hi", "branchHints": ["a", 2]}',
            '"branchHints" must be an array of strings\n',
        ),
    ],
)
async def test_bad_bodies_are_400_saying_what_is_needed(
    start_server: StartServer, http: aiohttp.ClientSession, body: bytes, message: str
) -> None:
    agent = FakeAgent([Completed()])
    base = await start_server(create_invoke_handler(agent))
    async with http.post(f"{base}/invoke", data=body, headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 400
        assert resp.headers["Content-Type"].startswith("text/plain")
        assert await resp.text() == message
    assert agent.calls == []


async def test_non_post_is_405_post_only(start_server: StartServer, http: aiohttp.ClientSession) -> None:
    base = await start_server(build_router({"/invoke": create_invoke_handler(FakeAgent())}))
    async with http.get(f"{base}/invoke") as resp:
        assert resp.status == 405
        assert resp.headers["Allow"] == "POST"
        assert await resp.text() == "POST only\n"


async def test_the_body_cap_is_1_mib(start_server: StartServer, http: aiohttp.ClientSession) -> None:
    agent = FakeAgent([Completed()])
    base = await start_server(create_invoke_handler(agent))
    envelope = json.dumps({"session": "s", "text": ""}).encode()
    room = MAX_BODY_BYTES - len(envelope)
    fits = envelope[:-2] + b"x" * room + envelope[-2:]
    async with http.post(f"{base}/invoke", data=io.BytesIO(fits), headers=JSON) as resp:
        assert resp.status == 200
        assert sse_events(await resp.text()) == [Completed()]
    # One byte over, counted in bytes: "é" is two.
    pad = "é".encode() * ((room + 1) // 2) + b"x" * ((room + 1) % 2)
    over = envelope[:-2] + pad + envelope[-2:]
    assert len(fits) == MAX_BODY_BYTES and len(over) == MAX_BODY_BYTES + 1
    async with http.post(f"{base}/invoke", data=io.BytesIO(over), headers=JSON) as resp:
        assert resp.status == 413
        assert await resp.text() == "body too large\n"
    assert len(agent.calls) == 1


async def test_a_2_mib_body_sent_slowly_without_length_gets_413_before_it_ends(
    start_server: StartServer,
) -> None:
    agent = FakeAgent([Completed()])
    base = await start_server(create_invoke_handler(agent))
    port = int(base.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    chunk = b"x" * (64 * 1024)
    sent = 0
    status_line = b""
    try:
        writer.write(
            b"POST /invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        writer.write(b'%x\r\n{"session":"s","text":"\r\n' % len(b'{"session":"s","text":"'))
        read = asyncio.ensure_future(reader.readline())
        while sent < 2 * MAX_BODY_BYTES and not read.done():
            try:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
            except ConnectionError:
                break
            sent += len(chunk)
            await asyncio.sleep(0.01)  # slowly: ~6 MiB/s at most, in 64 KiB pieces
        status_line = await asyncio.wait_for(read, 10)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        rest = await asyncio.wait_for(reader.readexactly(length), 10)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    assert status_line.startswith(b"HTTP/1.1 413")
    assert rest.endswith(b"body too large\n")
    assert sent < 2 * MAX_BODY_BYTES  # answered before the client finished sending
    assert agent.calls == []


async def test_an_agent_that_raises_before_the_stream_starts_is_500(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    class Broken:
        def invoke(self, scope: object, prompt: object) -> object:
            raise RuntimeError("boom")

    base = await start_server(create_invoke_handler(Broken()))  # type: ignore[arg-type]
    async with http.post(f"{base}/invoke", json={"session": "s", "text": "x"}) as resp:
        assert resp.status == 500
        assert await resp.text() == "internal error\n"


async def test_a_stream_that_raises_after_it_started_is_cut_not_left_hanging(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    agent = FakeAgent([Text("partial"), 0.05, RuntimeError("engine bug")])
    base = await start_server(create_invoke_handler(agent))
    async with http.post(f"{base}/invoke", json={"session": "s", "text": "x"}) as resp:
        assert resp.status == 200
        first = await asyncio.wait_for(resp.content.readuntil(b"\n\n"), 10)
        assert first == b'data: {"type":"text","delta":"partial"}\n\n'
        with pytest.raises(aiohttp.ClientPayloadError):
            await asyncio.wait_for(resp.content.read(), 10)
    assert agent.closed.is_set()


async def test_ping_comments_keep_a_quiet_stream_alive(
    start_server: StartServer, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sse, "PING_INTERVAL_S", 0.05)
    agent = FakeAgent([Text("a"), 0.4, Completed()])
    base = await start_server(create_invoke_handler(agent))
    async with http.post(f"{base}/invoke", json={"session": "s", "text": "x"}) as resp:
        body = await resp.text()
    assert body.count(": ping\n\n") >= 2
    assert body.startswith('data: {"type":"text","delta":"a"}\n\n')
    assert sse_events(body) == [Text("a"), Completed()]


async def test_no_ping_before_the_interval(start_server: StartServer, http: aiohttp.ClientSession) -> None:
    agent = FakeAgent([0.2, Completed()])
    base = await start_server(create_invoke_handler(agent))
    async with http.post(f"{base}/invoke", json={"session": "s", "text": "x"}) as resp:
        assert ": ping" not in await resp.text()


async def test_a_busy_session_is_200_with_one_session_busy_failure(
    tmp_path: Path, start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    slow = SlowTool(seconds=5)
    agent = real_agent(tmp_path, slow_tool_script(), [slow.build()])
    base = await start_server(create_invoke_handler(agent))
    try:
        async with http.post(f"{base}/invoke", json={"session": "same", "text": "slow please"}):
            await asyncio.wait_for(slow.started.wait(), 10)
            async with http.post(f"{base}/invoke", json={"session": "same", "text": "hi"}) as second:
                assert second.status == 200
                assert second.headers["Content-Type"] == "text/event-stream"
                events = sse_events(await second.text())
            assert len(events) == 1
            assert isinstance(events[0], Failed)
            assert events[0].code == "session_busy" and events[0].retryable
            async with http.post(f"{base}/invoke", json={"session": "other", "text": "hi"}) as third:
                other = sse_events(await third.text())
            assert other[0] == Text("ok") and isinstance(other[-1], Completed)  # other sessions run
    finally:
        await agent.aclose()


async def test_scripted_model_errors_arrive_as_a_failed_event(
    tmp_path: Path, start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    model = ScriptedModel.from_script({"steps": [{"error": {"status": 400, "message": "bad request"}}]})
    agent = real_agent(tmp_path, model)
    base = await start_server(create_invoke_handler(agent))
    try:
        async with http.post(f"{base}/invoke", json={"session": "e", "text": "x"}) as resp:
            assert resp.status == 200
            events = sse_events(await resp.text())
    finally:
        await agent.aclose()
    assert len(events) == 1 and isinstance(events[0], Failed) and "bad request" in events[0].details
