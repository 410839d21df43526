"""Against the real ``fastagent start``: a client that drops a turn while the agent is silent and
asks again on the same session at once is accepted, not answered ``session_busy`` while the
abandoned turn is still being aborted (issue 28 item 6)."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp

from fastagent_cli.contract import AgentEvent, event_from_wire
from tests.conftest import AgentFactory
from tests.serving.serving_proc import ServerProcess

# The turn starts a command that runs for 30 s: the agent is silent until it is killed.
SILENT_SCRIPT = {
    "steps": [{"toolCalls": [{"name": "bash", "args": {"command": "sleep 30"}}]}, {"text": "done"}]
}


async def _first_event(response: aiohttp.ClientResponse) -> AgentEvent:
    while True:
        line = await asyncio.wait_for(response.content.readline(), 10)
        assert line, "stream ended early"
        if line.startswith(b"data: "):
            return event_from_wire(line[6:].decode().strip())


async def test_a_turn_dropped_mid_silence_frees_its_session_for_an_immediate_retry(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent({"scripts/silent.json": json.dumps(SILENT_SCRIPT)}, model="scripted/silent")
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        port = await server.port()
        url = f"http://127.0.0.1:{port}/invoke"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            response = await http.post(url, json={"session": "b1", "text": "go"})
            assert (await _first_event(response)).type == "tool_started"
            for _ in range(5):
                response.close()  # the client leaves while the agent is silent
                asked = time.monotonic()
                response = await http.post(url, json={"session": "b1", "text": "go"})
                first = await _first_event(response)
                waited = time.monotonic() - asked
                assert first.type == "tool_started", first  # not failed{code: session_busy}
                assert waited < 0.3, f"accepted after {waited:.2f} s"
            response.close()
        assert "Traceback" not in server.text
