"""The ``/control`` plane through the real aiohttp host, as ``dev`` / ``start`` compose it: every
route with its success and error answers, bearer auth, CORS on everything, the body cap, the SSE
envelope, ``POST /control/invoke``."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from fastagent_cli.serving import sse
from fastagent_cli.serving.control import BODY_TOO_LARGE, CORS_HEADERS
from fastagent_cli.serving.host import serve
from fastagent_cli.serving.service import AgentService, create_agent_service
from tests.conftest import AgentFactory
from tests.serving.conftest import raw_http, split_response, sse_events

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SCRIPT = {
    "rules": [
        {"match": "slow", "steps": [{"toolCalls": [{"name": "nap", "args": {}}]}, {"text": "rested"}]},
        {"steps": [{"text": "hello back"}]},
    ]
}
NAP_TOOL = '''\
import asyncio

from fastagent_cli import define_tool


@define_tool
async def nap() -> str:
    """Sleep a while."""
    await asyncio.sleep(30)
    return "slept"
'''
SKILL = "---\nname: {name}\ndescription: {description}\n---\nDo it.\n"


@dataclass
class Plane:
    base: str
    http: aiohttp.ClientSession
    service: AgentService
    agent_dir: Path

    def url(self, path: str) -> str:
        return f"{self.base}/control{path}"

    async def get(self, path: str, **kwargs: Any) -> Any:
        async with self.http.get(self.url(path), headers=AUTH, **kwargs) as resp:
            assert resp.status == 200, await resp.text()
            return await resp.json()

    async def send(self, method: str, path: str, body: Any = None, **kwargs: Any) -> tuple[int, Any]:
        data: Any = body if isinstance(body, bytes | str) else json.dumps(body) if body is not None else None
        if isinstance(data, bytes | str) and len(data) > 65536:
            data = io.BytesIO(data.encode() if isinstance(data, str) else data)
        async with self.http.request(method, self.url(path), headers=AUTH, data=data, **kwargs) as resp:
            text = await resp.text()
            kind = resp.headers.get("Content-Type", "")
            return resp.status, json.loads(text) if kind.startswith("application/json") else text

    async def invoke(self, session: str, text: str) -> list[Any]:
        async with self.http.post(
            self.url("/invoke"), headers=AUTH, json={"session": session, "text": text}
        ) as resp:
            assert resp.status == 200
            return sse_events(await resp.text())


@pytest.fixture
async def plane(make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Plane]:
    monkeypatch.setenv("FASTAGENT_CONTROL_TOKEN", TOKEN)
    agent_dir = make_agent(
        {
            "scripts/plane.json": json.dumps(SCRIPT),
            "tools/nap.py": NAP_TOOL,
            "skills/triage/SKILL.md": SKILL.format(name="triage", description="Sort an inbox"),
        },
        model="scripted/plane",
        config="session_control = true\ncoding_tools = false\n",
    )
    service = await create_agent_service(agent_dir)
    server = serve(service.handler, port=0, host="127.0.0.1")
    port = await server.listening
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        try:
            yield Plane(f"http://127.0.0.1:{port}", http, service, agent_dir)
        finally:
            await server.close()
            await service.close()


def cors(headers: Any) -> bool:
    return all(headers.get(name) == value for name, value in CORS_HEADERS.items())


async def test_the_token_is_required_on_every_route(plane: Plane) -> None:
    assert plane.service.control is not None and plane.service.control.token == TOKEN
    assert not plane.service.control.minted
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        for path in ("/capabilities", "/sessions", "/sessions/x/events", "/no/such/route"):
            async with plane.http.get(plane.url(path), headers=headers) as resp:
                assert resp.status == 401
                assert await resp.text() == "unauthorized\n"
                assert resp.headers["WWW-Authenticate"].startswith("Bearer") and cors(resp.headers)
    async with plane.http.post(plane.url("/invoke"), json={"session": "s", "text": "x"}) as resp:
        assert resp.status == 401


async def test_cors_on_the_preflight_404_405_and_a_failing_handler(plane: Plane) -> None:
    async with plane.http.options(plane.url("/sessions/x/actions")) as resp:
        assert resp.status == 204 and cors(resp.headers)  # no token needed for a preflight
    status, body = await plane.send("GET", "/nothing")
    assert (status, body) == (404, "not found\n")
    async with plane.http.post(plane.url("/capabilities"), headers=AUTH) as resp:
        assert resp.status == 405 and resp.headers["Allow"] == "GET, HEAD" and cors(resp.headers)
    async with plane.http.head(plane.url("/capabilities"), headers=AUTH) as resp:
        assert resp.status == 200 and await resp.read() == b"" and cors(resp.headers)

    async def unreadable() -> list[Any]:
        raise PermissionError(13, "Permission denied", str(plane.agent_dir / "skills"))

    plane.service.opened.control._commands = unreadable  # type: ignore[attr-defined]
    async with plane.http.get(plane.url("/commands"), headers=AUTH) as resp:
        # an unreadable definition: an uncoded failure, still readable by a browser
        assert (resp.status, await resp.text()) == (500, "internal error\n") and cors(resp.headers)


async def test_capabilities_and_commands_reread_per_call(plane: Plane) -> None:
    capabilities = await plane.get("/capabilities")
    assert capabilities["steering"] and capabilities["followUp"] and capabilities["manualCompaction"]
    assert capabilities["updatable"] == ["name", "model", "thinkingLevel", "leafEntryId"]
    assert capabilities["fork"] and capabilities["delete"] and capabilities["toolProgress"]
    assert "openai/gpt-4.1-mini" in capabilities["modelSelection"]["allowedModels"]
    assert await plane.get("/commands") == [
        {"name": "triage", "description": "Sort an inbox", "source": "skill"}
    ]
    extra = plane.agent_dir / "skills" / "digest" / "SKILL.md"
    extra.parent.mkdir()
    extra.write_text(SKILL.format(name="digest", description="Daily digest"))
    assert sorted(c["name"] for c in await plane.get("/commands")) == ["digest", "triage"]


async def test_invoke_state_entries_and_the_list_with_an_id_holding_colon_and_slash(plane: Plane) -> None:
    session = "tg:-1001234567890/thread"
    encoded = quote(session, safe="")
    assert encoded == "tg%3A-1001234567890%2Fthread"
    state = await plane.get(f"/sessions/{encoded}")
    assert state == {
        "status": "idle",
        "model": "scripted/plane",
        "thinkingLevel": "medium",
        "availableThinkingLevels": ["off", "minimal", "low", "medium", "high", "xhigh", "max"],
        "pending": {"steering": 0, "followUp": 0, "steeringTexts": [], "followUpTexts": []},
    }
    assert await plane.get(f"/sessions/{encoded}/entries") == {"entries": []}
    events = await plane.invoke(session, "hi")
    assert [e.type for e in events] == ["text", "text", "completed"]
    listed = await plane.get("/sessions")
    assert [(x["session"], x["messageCount"], x["preview"]) for x in listed] == [(session, 2, "hi")]
    entries = await plane.get(f"/sessions/{encoded}/entries")
    assert [(e["kind"], e["data"]["text"]) for e in entries["entries"]] == [
        ("user", "hi"),
        ("assistant", "hello back"),
    ]
    state = await plane.get(f"/sessions/{encoded}")
    assert state["leafEntryId"] == entries["leafEntryId"] == entries["entries"][-1]["id"]
    since = await plane.get(f"/sessions/{encoded}/entries", params={"since": entries["entries"][0]["id"]})
    assert [e["kind"] for e in since["entries"]] == ["assistant"]


async def test_patch_answers(plane: Plane) -> None:
    await plane.invoke("p", "hi")
    assert await plane.send("PATCH", "/sessions/p", {"name": "Deploy notes", "bogus": 1, "other": 2}) == (
        200,
        {
            "ok": False,
            "error": {
                "code": "unsupported_capability",
                "message": (
                    "update field(s) bogus, other — capabilities().updatable lists what this serve sets"
                ),
                "retryable": False,
            },
        },
    )
    status, body = await plane.send("PATCH", "/sessions/p", {"name": 7})
    assert status == 200 and body["error"] == {
        "code": "invalid_command",
        "message": "name must be a string",
        "retryable": False,
    }
    status, body = await plane.send("PATCH", "/sessions/p", "[1, 2]")
    assert body["error"]["code"] == "invalid_command"
    assert await plane.send("PATCH", "/sessions/p", "{not json") == (400, "invalid JSON\n")
    status, body = await plane.send("PATCH", "/sessions/p", {"model": "nope/none"})
    assert (
        body["error"]["message"]
        == 'unknown model "nope/none" — capabilities().modelSelection lists the allowed specs'
    )
    status, body = await plane.send("PATCH", "/sessions/missing", {"name": "x"})
    assert body["error"]["code"] == "no_such_session" and body["error"]["retryable"] is False
    assert await plane.send("PATCH", "/sessions/p", b"") == (200, {"ok": True})  # nothing to set
    assert await plane.send("PATCH", "/sessions/p", {"name": "Deploy notes", "thinkingLevel": "high"}) == (
        200,
        {"ok": True},
    )
    state = await plane.get("/sessions/p")
    assert (state["name"], state["thinkingLevel"]) == ("Deploy notes", "high")
    assert (await plane.get("/sessions"))[0]["name"] == "Deploy notes"


async def test_fork_put_is_idempotent_and_refuses_a_conflict(plane: Plane) -> None:
    await plane.invoke("src", "one")
    await plane.invoke("src", "two")
    entries = (await plane.get("/sessions/src/entries"))["entries"]
    first_answer = entries[1]["id"]
    assert await plane.send("PUT", "/sessions/copy", {"from": "src", "at": first_answer}) == (
        200,
        {"ok": True},
    )
    assert await plane.send("PUT", "/sessions/copy", {"from": "src", "at": first_answer}) == (
        200,
        {"ok": True},
    )
    status, body = await plane.send("PUT", "/sessions/copy", {"from": "src", "at": entries[3]["id"]})
    assert body["error"]["code"] == "invalid_command" and "different history" in body["error"]["message"]
    status, body = await plane.send("PUT", "/sessions/x", {"from": "missing", "at": first_answer})
    assert body["error"]["code"] == "no_such_session"
    assert await plane.send("PUT", "/sessions/x", {"from": "src"}) == (
        400,
        "expected { from: string, at: string }\n",
    )
    assert await plane.send("PUT", "/sessions/x", "nope") == (400, "invalid JSON\n")
    copied = (await plane.get("/sessions/copy/entries"))["entries"]
    assert [e["id"] for e in copied] == [e["id"] for e in entries[:2]]


async def test_delete_ends_live_event_streams(plane: Plane) -> None:
    await plane.invoke("d", "hi")
    async with plane.http.get(plane.url("/sessions/d/events"), headers=AUTH) as stream:
        assert stream.status == 200 and stream.headers["Content-Type"] == "text/event-stream"
        assert cors(stream.headers)
        assert await plane.send("DELETE", "/sessions/d") == (200, {"ok": True})
        body = await asyncio.wait_for(stream.text(), 10)  # the stream ends
    assert body == ""
    status, body = await plane.send("DELETE", "/sessions/d")
    assert body["error"]["code"] == "no_such_session"
    assert await plane.get("/sessions") == []


async def test_events_carry_the_envelope_and_pings(plane: Plane, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "PING_INTERVAL_S", 0.2)
    messages: list[Any] = []
    pinged = asyncio.Event()

    async def watch(done: Callable[[Any], bool]) -> list[Any]:
        got: list[Any] = []
        async with plane.http.get(plane.url("/sessions/e%2F1/events"), headers=AUTH) as stream:
            async for raw in stream.content:
                line = raw.decode().rstrip("\n")
                if line == ": ping":
                    pinged.set()
                elif line.startswith("data: "):
                    got.append(json.loads(line[6:]))
                    if done(got[-1]):
                        return got
        return got

    first = asyncio.create_task(watch(lambda m: m["event"]["type"] == "run_settled"))
    await asyncio.wait_for(pinged.wait(), 10)
    second = asyncio.create_task(watch(lambda m: m["event"]["type"] == "run_settled"))
    await asyncio.sleep(0.3)
    await plane.invoke("e/1", "hi")
    messages = await asyncio.wait_for(first, 10)
    other = await asyncio.wait_for(second, 10)
    assert [m["seq"] for m in messages] == list(range(len(messages)))  # from 0 per connection
    assert [m["seq"] for m in other] == list(range(len(other)))
    assert {m["sessionId"] for m in messages} == {"e/1"}
    assert len({m["epoch"] for m in messages + other}) == 1  # one epoch per mount
    types = [m["event"]["type"] for m in messages]
    assert types[0] == "run_started" and "user_message" in types and "message_delta" in types
    run_id = messages[0]["event"]["runId"]
    assert all(m["event"]["runId"] == run_id for m in messages)
    assert messages[-1]["event"]["data"] == {"status": "completed"}


async def test_actions_steer_and_abort_a_run_and_refuse_malformed_ones(plane: Plane) -> None:
    def action(body: Any) -> Any:
        return plane.send("POST", "/sessions/a/actions", body)

    assert await action({"type": "dance"}) == (
        200,
        {
            "ok": False,
            "error": {"code": "invalid_command", "message": "malformed command", "retryable": False},
        },
    )
    assert (await action({"type": "steer", "prompt": {"text": 5}}))[1]["error"][
        "message"
    ] == "malformed command"
    assert (await action({"type": "steer", "prompt": {"text": "x", "images": [42]}}))[1]["error"]["code"] == (
        "invalid_command"
    )
    assert await action("not json") == (400, "invalid JSON\n")
    status, body = await action({"type": "steer", "prompt": {"text": "x"}})
    assert body["error"] == {
        "code": "no_active_run",
        "message": "no active run for this session: steer modulates a run an invoke is driving",
        "retryable": False,
    }
    big = {
        "type": "steer",
        "prompt": {"text": "x", "images": [{"mimeType": "image/png", "data": "A" * (1 << 20)}]},
    }
    assert await action(big) == (413, BODY_TOO_LARGE)
    assert BODY_TOO_LARGE == "body too large (limit 1 MiB — images and documents count base64-inflated)\n"

    running = asyncio.create_task(plane.invoke("a", "be slow"))
    for _ in range(500):
        if (await plane.get("/sessions/a"))["status"] == "running":
            break
        await asyncio.sleep(0.02)
    state = await plane.get("/sessions/a")
    status, body = await action(
        {"type": "steer", "prompt": {"text": "hurry", "images": [{"mimeType": "image/png", "data": "iVBO"}]}}
    )
    assert body == {"ok": True, "runId": state["activeRunId"]}
    assert (await plane.get("/sessions/a"))["pending"] == {
        "steering": 1,
        "followUp": 0,
        "steeringTexts": ["hurry"],
        "followUpTexts": [],
    }
    status, body = await action({"type": "compact"})
    assert body["error"]["code"] == "session_busy" and body["error"]["retryable"] is True
    status, body = await action({"type": "abort"})
    assert body == {"ok": True, "runId": state["activeRunId"]}
    events = await asyncio.wait_for(running, 10)
    assert events[-1].type == "failed" and events[-1].code == "aborted"
    status, body = await action({"type": "compact", "instructions": "x"})
    assert body == {"ok": True}  # the aborted turn's small session compacts whole (issue 26)
    assert (await action({"type": "compact", "instructions": 3}))[1]["error"][
        "message"
    ] == "malformed command"


async def test_control_invoke_is_the_data_plane(plane: Plane) -> None:
    status, body = await plane.send(
        "POST", "/invoke", {"session": "i", "text": "hi", "images": [{"mimeType": "image/png", "data": "x"}]}
    )
    assert (status, body) == (400, '"images[0].data" is not valid base64\n')  # images are taken (issue 34)
    assert await plane.send("POST", "/invoke", {"session": 1}) == (
        400,
        'need { "session": string, "text": string }\n',
    )
    assert await plane.send("POST", "/invoke", b"x" * ((1 << 20) + 1)) == (413, BODY_TOO_LARGE)
    # a client that disconnects cancels the run
    async with plane.http.post(
        plane.url("/invoke"), headers=AUTH, json={"session": "i", "text": "slow please"}
    ) as resp:
        async for raw in resp.content:
            if b"tool_started" in raw:
                break
    for _ in range(500):
        if (await plane.get("/sessions/i"))["status"] == "idle":
            break
        await asyncio.sleep(0.02)
    assert (await plane.get("/sessions/i"))["status"] == "idle"
    tools = [e for e in (await plane.get("/sessions/i/entries"))["entries"] if e["kind"] == "tool"]
    assert tools and tools[0]["data"]["text"] == "Operation aborted"


async def test_a_store_that_cannot_be_listed_is_503(plane: Plane) -> None:
    sessions = plane.service.opened.sessions_dir
    sessions.parent.mkdir(parents=True, exist_ok=True)
    if sessions.exists():
        sessions.rmdir()
    sessions.write_text("not a directory")
    status, body = await plane.send("GET", "/sessions")
    # the code at the top level of the body, where the original's remote client reads it
    assert status == 503 and body["code"] == "sessions_unavailable" and body["retryable"] is True
    assert isinstance(body["message"], str) and body["message"]


async def test_raw_paths_are_matched_undecoded(plane: Plane) -> None:
    port = int(plane.base.rsplit(":", 1)[1])
    request = (
        f"GET /control/sessions/a%2F..%2Fb HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    status, headers, body = split_response(await raw_http(port, request))
    assert status == 200 and json.loads(body)["status"] == "idle"  # the id "a/../b", not a path
    bad = request.replace(b"a%2F..%2Fb", b"bad%zz")
    status, headers, body = split_response(await raw_http(port, bad))
    assert (status, body) == (404, b"not found\n") and "access-control-allow-origin" not in headers  # never *


async def wait_status(plane: Plane, session: str, status: str) -> dict[str, Any]:
    for _ in range(500):
        state: dict[str, Any] = await plane.get(f"/sessions/{session}")
        if state["status"] == status:
            return state
        await asyncio.sleep(0.02)
    raise AssertionError(f"session {session} never {status}")


async def test_a_detached_invoke_answers_at_once_and_the_run_outlives_the_request(plane: Plane) -> None:
    async with plane.http.get(plane.url("/sessions/d/events"), headers=AUTH) as events:
        status, body = await plane.send(
            "POST", "/invoke", {"session": "d", "text": "slow please", "detach": True}
        )
        assert status == 200 and body["ok"] is True
        running = await wait_status(plane, "d", "running")
        assert body["runId"] == running["activeRunId"]  # the run the answer names is the one going on
        assert len(plane.service.detached or ()) == 1
        # the run started after the answer: the watcher sees it from run_started on
        first = json.loads((await events.content.readline()).decode()[len("data: ") :])
        assert first["event"] == {**first["event"], "type": "run_started", "runId": body["runId"]}
    # the request is long gone and nobody watches: the run goes on until it is stopped
    await asyncio.sleep(0.3)
    assert (await plane.get("/sessions/d"))["status"] == "running"
    busy = await plane.send("POST", "/invoke", {"session": "d", "text": "again", "detach": True})
    assert busy == (
        200,
        {
            "ok": False,
            "error": {"code": "session_busy", "message": busy[1]["error"]["message"], "retryable": True},
        },
    )
    assert "busy" in busy[1]["error"]["message"]
    status, body = await plane.send("POST", "/sessions/d/actions", {"type": "abort"})
    assert body["ok"] is True
    await wait_status(plane, "d", "idle")
    assert len(plane.service.detached or ()) == 0
    entries = (await plane.get("/sessions/d/entries"))["entries"]
    assert [e["kind"] for e in entries] == ["user", "assistant", "tool"]
    assert entries[1]["data"]["toolCalls"] == [
        {"id": entries[2]["data"]["toolCallId"], "name": "nap", "args": {}}
    ]


async def test_a_detached_invoke_that_completes_at_once_is_ok_and_bad_detach_is_400(plane: Plane) -> None:
    status, body = await plane.send("POST", "/invoke", {"session": "q", "text": "hi", "detach": True})
    assert status == 200 and body["ok"] is True and isinstance(body["runId"], str)
    await wait_status(plane, "q", "idle")
    entries = (await plane.get("/sessions/q/entries"))["entries"]
    assert [(e["kind"], e["data"]["text"]) for e in entries] == [("user", "hi"), ("assistant", "hello back")]
    assert await plane.send("POST", "/invoke", {"session": "q", "text": "hi", "detach": "yes"}) == (
        400,
        '"detach" must be a boolean\n',
    )
    assert (
        await plane.send("POST", "/invoke", {"session": "q", "text": "x", "detach": False, "images": [1]})
    )[0] == 400


async def test_closing_the_service_cancels_detached_runs(plane: Plane) -> None:
    status, body = await plane.send(
        "POST", "/invoke", {"session": "c", "text": "slow please", "detach": True}
    )
    assert body["ok"] is True
    await wait_status(plane, "c", "running")
    detached = plane.service.detached
    assert detached is not None and len(detached) == 1
    await detached.aclose()
    assert len(detached) == 0
    assert (await plane.get("/sessions/c"))["status"] == "idle"
    tools = [e for e in (await plane.get("/sessions/c/entries"))["entries"] if e["kind"] == "tool"]
    assert tools and tools[0]["data"]["text"] == "Operation aborted"
    refused = await plane.send("POST", "/invoke", {"session": "c", "text": "hi", "detach": True})
    assert refused[1]["error"] == {
        "code": "boundary_command_failed",
        "message": "the server is shutting down",
        "retryable": True,
    }
