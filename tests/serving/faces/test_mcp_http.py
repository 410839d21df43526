"""``/mcp`` on a real ``fastagent start``, driven by the ``mcp`` SDK's own streamable HTTP client
(and raw HTTP for the transport's refusals)."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import AgentFactory
from tests.serving.faces.agents import face_agent, sleepers, wait_until
from tests.serving.serving_proc import ServerProcess

START = ("--port", "0", "--bind", "127.0.0.1")
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def agent(make_agent: AgentFactory) -> Path:
    return face_agent(make_agent, "[http]\nmcp = true\n")


async def test_ask_streams_progress_answers_and_continues_its_session(agent: Path) -> None:
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        port = await server.port()
        await server.wait_for(re.escape(f"mcp: http://127.0.0.1:{port}/mcp"))  # printed after the port
        assert "faces:     mcp (MCP server on /mcp)" in server.text
        progress: list[tuple[float, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, message))

        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp")) as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info is not None and client.server_info.name == "agent"
            assert "terse helper" in (client.instructions or "")
            assert client.server_capabilities.resources is None  # sessions: the control plane's
            with pytest.raises(MCPError) as no_resources:
                await client.list_resources()
            assert no_resources.value.code == -32601
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ["ask"]
            assert tools[0].input_schema["required"] == ["message"]
            first = await client.call_tool("ask", {"message": "use a tool"}, progress_callback=on_progress)
            assert first.is_error is False
            assert first.structured_content is not None
            session = first.structured_content["session"]
            assert session.startswith("mcp-")
            assert first.structured_content["text"] == "turn 1: use a tool"
            assert [getattr(c, "text", "") for c in first.content][0] == "turn 1: use a tool"
            assert [m for _, m in progress] == ["running tool bash", "tool done", "thinking", "answering"]
            assert [v for v, _ in progress] == [1, 2, 3, 4]
            again = await client.call_tool("ask", {"message": "more", "session": session})
            assert again.structured_content == {"session": session, "text": "turn 2: more"}
            fresh = await client.call_tool("ask", {"message": "hi"})
            assert fresh.structured_content is not None
            assert fresh.structured_content["session"] != session
            assert fresh.structured_content["text"] == "turn 1: hi"
            prompts = (await client.list_prompts()).prompts
            assert [(p.name, p.description) for p in prompts] == [
                ("release-notes", "Write release notes from the git log.")
            ]
            got = await client.get_prompt("release-notes", {"request": "for v2"})
            text = getattr(got.messages[0].content, "text", "")
            assert text.startswith("Read the log, group by kind.") and text.endswith("for v2")
        assert "Traceback" not in server.text


async def test_with_the_control_plane_on_the_sessions_are_resources(make_agent: AgentFactory) -> None:
    agent = face_agent(make_agent, "session_control = true\n[http]\nmcp = true\n")
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        port = await server.port()
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp")) as client:
            await client.call_tool("ask", {"message": "hi", "session": "r1"})
            resources = (await client.list_resources()).resources
            assert [r.uri for r in resources] == ["fastagent://session/r1"]
            text = getattr((await client.read_resource(resources[0].uri)).contents[0], "text", "")
            assert text.startswith("# Session r1\n") and "turn 1: hi" in text


async def test_a_failed_turn_and_a_busy_session_are_tool_errors(agent: Path) -> None:
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        port = await server.port()
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp")) as client:
            failed = await client.call_tool("ask", {"message": "fail now"})
            assert failed.is_error is True
            assert "the agent's turn failed" in getattr(failed.content[0], "text", "")
            empty = await client.call_tool("ask", {"message": "  "})
            assert empty.is_error is True
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("nope", {})
            assert unknown.value.code == -32602
            long_turn = asyncio.ensure_future(client.call_tool("ask", {"message": "sleep", "session": "m1"}))
            assert await wait_until(lambda: sleepers() > 0)
            busy = await client.call_tool("ask", {"message": "hello", "session": "m1"})
            assert busy.is_error is True
            assert "session m1 is busy" in getattr(busy.content[0], "text", "")
            long_turn.cancel()
        assert "Traceback" not in server.text


async def test_a_call_the_client_cancels_aborts_the_turn(agent: Path) -> None:
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        port = await server.port()
        before = sleepers()
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp")) as client:
            with pytest.raises(MCPError) as timed_out:  # the client sends notifications/cancelled
                await client.call_tool("ask", {"message": "sleep", "session": "c1"}, read_timeout_seconds=1.5)
            assert timed_out.value.code == -32001
            assert await wait_until(lambda: sleepers() <= before, 5), (
                "the cancelled turn's command is still running"
            )
            after = await client.call_tool("ask", {"message": "hello", "session": "c1"})
            assert after.is_error is False  # the lease was released: not busy
        assert "Traceback" not in server.text


async def _post(http: aiohttp.ClientSession, url: str, body: Any, **headers: str) -> aiohttp.ClientResponse:
    return await http.post(url, json=body, headers={**ACCEPT, **headers})


async def test_the_transport_refuses_what_the_protocol_refuses(agent: Path) -> None:
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        port = await server.port()
        url = f"http://127.0.0.1:{port}/mcp"
        async with aiohttp.ClientSession() as http:
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            missing = await _post(http, url, ping)
            assert missing.status == 400
            assert (await missing.json())["error"]["code"] == -32600
            unknown = await _post(http, url, ping, **{"Mcp-Session-Id": "nope"})
            assert unknown.status == 404
            opened = await _post(http, url, INIT)
            assert opened.status == 200 and opened.content_type == "application/json"
            assert (await opened.json())["result"]["protocolVersion"] == "2025-06-18"
            session = opened.headers["Mcp-Session-Id"]
            assert all(0x21 <= ord(ch) <= 0x7E for ch in session)
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            accepted = await _post(http, url, note, **{"Mcp-Session-Id": session})
            assert accepted.status == 202 and await accepted.read() == b""
            pong = await _post(
                http, url, ping, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}
            )
            assert await pong.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
            bad_version = await _post(
                http, url, ping, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "1999-01-01"}
            )
            assert bad_version.status == 400
            batch = await _post(http, url, [ping], **{"Mcp-Session-Id": session})
            assert batch.status == 400
            nomethod = await _post(http, url, {**ping, "method": "nope/x"}, **{"Mcp-Session-Id": session})
            assert (await nomethod.json())["error"]["code"] == -32601
            not_json = await http.post(url, data=b"{", headers={**ACCEPT, "Content-Type": "application/json"})
            assert not_json.status == 400 and (await not_json.json())["error"]["code"] == -32700
            form = await http.post(url, data=b"x=1", headers={"Content-Type": "text/plain"})
            assert form.status == 415
            huge = await http.post(
                url,
                data=io.BytesIO(b"[" + b" " * (1 << 20) + b"]"),
                headers={"Content-Type": "application/json"},
            )
            assert huge.status == 413
            get = await http.get(url, headers={"Accept": "text/event-stream", "Mcp-Session-Id": session})
            assert get.status == 405
            ended = await http.delete(url, headers={"Mcp-Session-Id": session})
            assert ended.status == 204
            gone = await _post(http, url, ping, **{"Mcp-Session-Id": session})
            assert gone.status == 404
        assert "Traceback" not in server.text


async def test_a_token_guards_mcp_and_a_public_bind_needs_one(agent: Path) -> None:
    env = {"FASTAGENT_TOKEN": "s3cret-token"}
    async with ServerProcess.spawn("start", str(agent), *START, env=env) as server:
        port = await server.port()
        url = f"http://127.0.0.1:{port}/mcp"
        async with aiohttp.ClientSession() as http:
            refused = await _post(http, url, INIT)
            assert refused.status == 401
        auth = {"Authorization": "Bearer s3cret-token"}
        async with (
            httpx2.AsyncClient(headers=auth) as authed,
            Client(streamable_http_client(url, http_client=authed)) as client,
        ):
            answer = await client.call_tool("ask", {"message": "hi"})
            assert answer.is_error is False
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "0.0.0.0") as exposed:
        assert await exposed.wait() == 1
        assert "[http] mcp = true needs a bearer token when others can reach it" in exposed.text
