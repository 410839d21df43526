"""The A2A face on a real ``fastagent start``, driven by the ``a2a-sdk`` client (A2A 1.0, and its
0.3 transport for the method names the 0.3 binding uses), plus raw JSON-RPC for the edges."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory, create_client
from a2a.client.card_resolver import A2ACardResolver
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from tests.conftest import AgentFactory
from tests.serving.faces.agents import face_agent, sleepers, wait_until
from tests.serving.serving_proc import ServerProcess

START = ("--port", "0", "--bind", "127.0.0.1")


@pytest.fixture
def agent(make_agent: AgentFactory) -> Path:
    return face_agent(make_agent, "[http]\na2a = true\n")


def _send(text: str, context: str | None = None, *, at_once: bool = False) -> SendMessageRequest:
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if context is not None:
        message.context_id = context
    request = SendMessageRequest(message=message)
    request.configuration.return_immediately = at_once
    return request


async def _events(client: Any, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def _answer(events: list[StreamResponse]) -> str:
    return "".join(
        p.text for e in events if e.HasField("artifact_update") for p in e.artifact_update.artifact.parts
    )


async def test_the_card_describes_the_agent_its_skills_and_its_endpoint(agent: Path) -> None:
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        port = await server.port()
        base = f"http://127.0.0.1:{port}"
        # the face lines follow the listening line that port() waits for: wait for them too
        await server.wait_for(re.escape(f"a2a: {base}/a2a (agent card: {base}/.well-known/agent-card.json)"))
        async with httpx.AsyncClient() as http:
            card: AgentCard = await A2ACardResolver(http, base).get_agent_card()
        assert card.name == "agent"
        assert card.description == "A terse helper that answers questions about the repository."
        assert [(s.id, s.description) for s in card.skills] == [
            ("release-notes", "Write release notes from the git log.")
        ]
        assert {(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces} == {
            (f"{base}/a2a", "JSONRPC", "1.0"),
            (f"{base}/a2a", "JSONRPC", "0.3"),
        }
        assert card.capabilities.streaming is True
        assert not card.security_schemes  # no token: no scheme


async def test_send_and_stream_map_the_context_to_the_session(agent: Path) -> None:
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        base = f"http://127.0.0.1:{await server.port()}"
        blocking = await create_client(base, ClientConfig(streaming=False))
        (only,) = await _events(blocking, _send("hello"))
        task = only.task
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "turn 1: hello"
        assert task.context_id.startswith("a2a-")
        assert [m.role for m in task.history] == [Role.ROLE_USER, Role.ROLE_AGENT]
        streaming = await create_client(base, ClientConfig(streaming=True))
        events = await _events(streaming, _send("use a tool", task.context_id))
        assert events[0].HasField("task")
        assert events[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
        notes = [
            e.status_update.status.message.parts[0].text
            for e in events
            if e.HasField("status_update") and e.status_update.status.message.parts
        ]
        assert notes == ["running tool bash", "tool done", "thinking"]
        assert _answer(events) == "turn 2: use a tool"  # the same session: its second user message
        chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
        assert chunks[0].append is False and all(c.append for c in chunks[1:]) and chunks[-1].last_chunk
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        fetched = await streaming.get_task(GetTaskRequest(id=events[0].task.id, history_length=1))
        assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
        assert [m.role for m in fetched.history] == [Role.ROLE_AGENT]
        with pytest.raises(TaskNotFoundError):
            await streaming.get_task(GetTaskRequest(id="task-nope"))
        with pytest.raises(TaskNotCancelableError):
            await streaming.cancel_task(CancelTaskRequest(id=fetched.id))
        failed = await _events(blocking, _send("fail please"))
        assert failed[0].task.status.state == TaskState.TASK_STATE_FAILED
        assert "the model refused" in failed[0].task.status.message.parts[0].text
        await blocking.close()
        await streaming.close()
        assert "Traceback" not in server.text


async def test_cancel_aborts_the_turn_and_a_busy_context_is_rejected(agent: Path) -> None:
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        base = f"http://127.0.0.1:{await server.port()}"
        before = sleepers()
        client = await create_client(base, ClientConfig(streaming=False))
        (started,) = await _events(client, _send("sleep", "ctx-1", at_once=True))
        assert started.task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
        assert await wait_until(lambda: sleepers() > before)
        (busy,) = await _events(client, _send("hello", "ctx-1"))
        assert busy.task.status.state == TaskState.TASK_STATE_REJECTED
        assert "busy" in busy.task.status.message.parts[0].text
        canceled = await client.cancel_task(CancelTaskRequest(id=started.task.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        assert await wait_until(lambda: sleepers() <= before, 5), "the command still runs"
        (after,) = await _events(client, _send("hello", "ctx-1"))
        assert after.task.status.state == TaskState.TASK_STATE_COMPLETED  # the lease is free
        await client.close()
        assert "Traceback" not in server.text


async def test_the_0_3_transport_speaks_the_0_3_method_names(agent: Path) -> None:
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        base = f"http://127.0.0.1:{await server.port()}"
        methods: list[str] = []

        async def record(request: httpx.Request) -> None:
            if request.method == "POST":
                methods.append(json.loads(request.content)["method"])

        async with httpx.AsyncClient(event_hooks={"request": [record]}) as http:
            card = await A2ACardResolver(http, base).get_agent_card()
            legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(legacy)
            for streaming in (False, True):
                client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)
                events = await _events(client, _send("hello", "ctx-03"))
                task_id = events[0].task.id
                text = _answer(events) or events[0].task.artifacts[0].parts[0].text
                assert text.startswith("turn ") and text.endswith(": hello")
                assert (await client.get_task(GetTaskRequest(id=task_id))).status.state == (
                    TaskState.TASK_STATE_COMPLETED
                )
                with pytest.raises(TaskNotCancelableError):
                    await client.cancel_task(CancelTaskRequest(id=task_id))
        assert methods == [
            "message/send",
            "tasks/get",
            "tasks/cancel",
            "message/stream",
            "tasks/get",
            "tasks/cancel",
        ]
        assert "Traceback" not in server.text


async def _rpc(http: aiohttp.ClientSession, url: str, method: str, params: Any, **headers: str) -> Any:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    async with http.post(url, json=body, headers=headers) as response:
        assert response.status == 200, await response.text()
        return await response.json()


async def test_raw_json_rpc_edges(agent: Path) -> None:
    async with ServerProcess.spawn("start", str(agent), *START) as server:
        url = f"http://127.0.0.1:{await server.port()}/a2a"
        message = {
            "kind": "message",
            "messageId": "m1",
            "role": "user",
            "parts": [{"kind": "text", "text": "hi"}],
        }
        async with aiohttp.ClientSession() as http:
            task = (await _rpc(http, url, "message/send", {"message": message}))["result"]
            assert task["kind"] == "task" and task["status"]["state"] == "completed"
            assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "turn 1: hi"}]
            nomethod = await _rpc(http, url, "tasks/list", {})
            assert nomethod["error"]["code"] == -32601
            file_part = {**message, "parts": [{"kind": "file", "file": {"uri": "https://x/y.png"}}]}
            refused = await _rpc(http, url, "message/send", {"message": file_part})
            assert refused["error"]["code"] == -32005
            no_id = await _rpc(http, url, "message/send", {"message": {**message, "messageId": ""}})
            assert no_id["error"]["code"] == -32602
            again = await _rpc(http, url, "message/send", {"message": {**message, "taskId": task["id"]}})
            assert again["error"]["code"] == -32004
            unknown = await _rpc(http, url, "message/send", {"message": {**message, "taskId": "task-x"}})
            assert unknown["error"]["code"] == -32001
            async with http.post(url, data=b"{", headers={"Content-Type": "application/json"}) as bad:
                assert (await bad.json())["error"]["code"] == -32700
            async with http.get(url) as get:
                assert get.status == 405
        assert "Traceback" not in server.text


async def test_a_token_guards_the_endpoint_and_the_card_names_the_scheme(agent: Path) -> None:
    env = {"FASTAGENT_TOKEN": "s3cret-token"}
    async with ServerProcess.spawn("start", str(agent), *START, env=env) as server:
        base = f"http://127.0.0.1:{await server.port()}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/.well-known/agent-card.json") as response:
                card = await response.json()
            assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
            body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
            async with http.post(f"{base}/a2a", json=body) as refused:
                assert refused.status == 401
        async with httpx.AsyncClient(headers={"Authorization": "Bearer s3cret-token"}) as authed:
            client = await create_client(base, ClientConfig(streaming=False, httpx_client=authed))
            (only,) = await _events(client, _send("hello"))
            assert only.task.status.state == TaskState.TASK_STATE_COMPLETED
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "0.0.0.0") as exposed:
        assert await exposed.wait() == 1
        assert "[http] a2a = true needs a bearer token" in exposed.text
