"""Against the real ``fastagent start``: an MCP client that drops an ``ask`` while the agent is
silent and asks again on the same session at once is taken, not answered "busy" while the
abandoned turn is still being aborted (the lease shared with ``/invoke``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from tests.conftest import AgentFactory
from tests.serving.faces.agents import face_agent
from tests.serving.serving_proc import ServerProcess

HEADERS = {"Accept": "application/json, text/event-stream"}


async def _first_message(response: aiohttp.ClientResponse) -> dict[str, object]:
    while True:
        line = await asyncio.wait_for(response.content.readline(), 10)
        assert line, "stream ended early"
        if line.startswith(b"data: "):
            return dict(json.loads(line[6:]))


async def test_an_ask_dropped_mid_silence_frees_its_session_for_an_immediate_retry(
    make_agent: AgentFactory,
) -> None:
    agent: Path = face_agent(make_agent, "[http]\nmcp = true\n")
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        url = f"http://127.0.0.1:{await server.port()}/mcp"
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
            async with http.post(url, json=init, headers=HEADERS) as opened:
                headers = {**HEADERS, "Mcp-Session-Id": opened.headers["Mcp-Session-Id"]}
            call = {
                "jsonrpc": "2.0",
                "method": "tools/call",
                "params": {"name": "ask", "arguments": {"message": "sleep", "session": "d1"}, "_meta": {}},
            }
            for attempt in range(6):
                call["id"] = attempt + 1
                call["params"]["_meta"] = {"progressToken": attempt}  # type: ignore[index]
                response = await http.post(url, json=call, headers=headers)
                first = await _first_message(response)
                assert first.get("method") == "notifications/progress", first  # not a busy result
                assert first["params"]["message"] == "running tool bash"  # type: ignore[index]
                response.close()  # the client leaves while the agent is silent
        assert "Traceback" not in server.text
