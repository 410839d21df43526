"""Tool approvals through the real ``fastagent start``: the /invoke stream carries
``approval_requested``, the control plane lists and answers approvals (401/404/409 as the other
actions), a restart while waiting keeps the request and an answer resumes the turn, and a bind
beyond loopback makes ``bash`` ask by default."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import aiohttp

from fastagent_cli.contract import event_from_json
from fastagent_cli.serving.control import read_control_file
from tests.conftest import AgentFactory
from tests.serving.serving_proc import ServerProcess

SCRIPT = {
    "rules": [
        {
            "match": "shell",
            "steps": [{"toolCalls": [{"name": "bash", "args": {"command": "echo hi"}}]}, {"text": "ran"}],
        },
        {
            "steps": [
                {"toolCalls": [{"name": "deploy", "args": {"env": "prod"}}, {"name": "note", "args": {}}]},
                {"text": "finished"},
            ]
        },
    ]
}
DEPLOY = (
    "from fastagent_cli import tool\n\n@tool(approval=True)\ndef deploy(env: str) -> str:\n"
    "    'Deploy.'\n    return f'deployed {env}'\n"
)
NOTE = "from fastagent_cli import tool\n\n@tool\ndef note() -> str:\n    'Note.'\n    return 'noted'\n"


def _agent(make_agent: AgentFactory, coding: str = "false") -> Path:
    files = {"scripts/s.json": json.dumps(SCRIPT), "tools/deploy.py": DEPLOY, "tools/note.py": NOTE}
    return make_agent(files, model="scripted/s", config=f"coding_tools = {coding}\nsession_control = true\n")


class Plane:
    def __init__(self, http: aiohttp.ClientSession, url: str, token: str) -> None:
        self.http, self.url, self.headers = http, url, {"Authorization": f"Bearer {token}"}

    async def state(self, session: str) -> dict[str, Any]:
        async with self.http.get(f"{self.url}/control/sessions/{session}", headers=self.headers) as resp:
            assert resp.status == 200
            return dict(await resp.json())

    async def answer(self, session: str, aid: str, body: Any, token: str | None = None) -> tuple[int, Any]:
        headers = self.headers if token is None else {"Authorization": f"Bearer {token}"}
        url = f"{self.url}/control/sessions/{session}/approvals/{aid}"
        async with self.http.post(url, json=body, headers=headers) as resp:
            text = await resp.text()
            return resp.status, json.loads(text) if text.startswith("{") else text

    async def approvals(self, session: str, count: int = 1) -> list[dict[str, Any]]:
        for _ in range(200):
            found = (await self.state(session)).get("approvals", [])
            if len(found) >= count:
                return list(found)
            await asyncio.sleep(0.05)
        raise AssertionError("no pending approval in state()")


async def _plane(server: ServerProcess, agent: Path, http: aiohttp.ClientSession) -> Plane:
    await server.wait_for(r"control plane on http://127\.0\.0\.1:\d+/control")
    url, token = read_control_file(agent / ".fastagent")
    return Plane(http, url, token)


async def _stream(http: aiohttp.ClientSession, url: str, session: str, text: str) -> list[Any]:
    events: list[Any] = []
    async with http.post(f"{url}/invoke", json={"session": session, "text": text}) as resp:
        assert resp.status == 200
        async for raw in resp.content:
            line = raw.decode().strip()
            if line.startswith("data: "):
                events.append(event_from_json(json.loads(line[6:])))
    return events


async def test_the_stream_carries_the_request_and_the_plane_answers_it(make_agent: AgentFactory) -> None:
    agent = _agent(make_agent)
    async with (
        ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
    ):
        plane = await _plane(server, agent, http)
        turn = asyncio.create_task(_stream(http, plane.url, "s1", "go"))
        (pending,) = await plane.approvals("s1")
        assert pending["tool"] == "deploy" and pending["args"] == {"env": "prod"}
        assert pending["expiresAt"] - pending["requestedAt"] == 86_400_000
        aid = pending["id"]
        assert (await plane.answer("s1", aid, {"decision": "approve"}, token="wrong"))[0] == 401
        status, body = await plane.answer("s1", "ap_nope", {"decision": "approve"})
        assert status == 404 and body["error"]["code"] == "no_such_approval"
        status, body = await plane.answer("s1", aid, {"decision": "maybe"})
        assert status == 400 and body["error"]["code"] == "invalid_command"
        status, body = await plane.answer("s1", aid, {"decision": "approve", "by": "alice"})
        assert status == 200 and body["ok"] is True
        status, body = await plane.answer("s1", aid, {"decision": "deny"})
        assert status == 409 and body["error"]["code"] == "approval_closed"
        events = await asyncio.wait_for(turn, 30)
        kinds = [e.type for e in events]
        assert "approval_requested" in kinds and kinds[-1] == "completed"
        ended = {e.id: e for e in events if e.type == "tool_ended"}
        request = next(e for e in events if e.type == "approval_requested")
        assert ended[request.tool_call_id].content == [{"type": "text", "text": "deployed prod"}]
        assert "approvals" not in await plane.state("s1")
        await server.wait_for(r"\[approval\] session=s1 deploy approved by alice \(answer\)")


async def test_a_restart_while_waiting_then_an_answer_resumes_the_turn(make_agent: AgentFactory) -> None:
    agent = _agent(make_agent)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
            plane = await _plane(server, agent, http)
            turn = asyncio.create_task(_stream(http, plane.url, "s2", "go"))
            (pending,) = await plane.approvals("s2")
            server.send(signal.SIGINT)
            await server.wait()
            turn.cancel()
        async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
            plane = await _plane(server, agent, http)
            (again,) = await plane.approvals("s2")
            assert again["id"] == pending["id"]
            status, body = await plane.answer("s2", again["id"], {"decision": "deny", "reason": "not today"})
            assert status == 200 and body["ok"] is True, body
            for _ in range(200):
                state = await plane.state("s2")
                if state["status"] == "idle":
                    break
                await asyncio.sleep(0.05)
            async with http.get(f"{plane.url}/control/sessions/s2/entries", headers=plane.headers) as resp:
                entries = (await resp.json())["entries"]
            tools = [e["data"] for e in entries if e["kind"] == "tool"]
            by_name = {t["toolName"]: t for t in tools}
            assert by_name["deploy"]["text"] == "Denied: not today" and by_name["deploy"]["isError"]
            assert by_name["note"]["text"] == "noted"  # the free call ran before the restart, kept
            texts = [e["data"].get("text") for e in entries if e["kind"] == "assistant"]
            assert texts[-1] == "finished"


async def test_beyond_loopback_bash_asks_by_default(make_agent: AgentFactory) -> None:
    agent = _agent(make_agent, coding='["bash"]')
    env = {"FASTAGENT_TOKEN": "tok-123", "FASTAGENT_CONTROL_TOKEN": "ctl-123"}
    async with (
        ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "0.0.0.0", env=env) as server,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
    ):
        port = await server.port()
        plane = Plane(http, f"http://127.0.0.1:{port}", "ctl-123")
        headers = {"Authorization": "Bearer tok-123"}
        url = f"http://127.0.0.1:{port}/invoke"
        turn = asyncio.create_task(http.post(url, json={"session": "s3", "text": "shell"}, headers=headers))
        (pending,) = await plane.approvals("s3")
        assert pending["tool"] == "bash" and pending["args"] == {"command": "echo hi"}
        assert (await plane.answer("s3", pending["id"], {"decision": "approve"}))[0] == 200
        response = await asyncio.wait_for(turn, 30)
        body = await response.text()
        assert '"type":"completed"' in body and "hi" in body
