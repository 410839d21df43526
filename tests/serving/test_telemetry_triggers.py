"""OpenTelemetry's other triggers and outgoing requests, through the real ``fastagent start`` and a
real OTLP/HTTP receiver (decoded with ``opentelemetry-proto``): a control-plane action's root span
(the caller's ``traceparent`` continued, the run it starts under it, a refused one's status), a
schedule fire's root span, and a remote MCP tool call whose HTTP request carries the
``execute_tool`` span's ``traceparent``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import AgentFactory
from tests.fakes.fake_providers import FakeCall, FakeOpenAI, openai_reply
from tests.schedules.test_start_process import claim_yesterday, clock_env, next_nine, schedule
from tests.serving.otlp_receiver import OtlpReceiver, attributes
from tests.serving.serving_proc import ServerProcess
from tests.serving.test_telemetry import CALLER_SPAN, CALLER_TRACE, FAST, traced_agent
from tests.tools.mcp.test_mcp_http import HttpServer

TOKEN = "trace-token"
ACTIONS = "POST /control/sessions/{id}/actions"
CALLER = {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}


@pytest.fixture
async def receiver() -> AsyncIterator[OtlpReceiver]:
    async with OtlpReceiver() as server:
        yield server


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[HttpServer]:
    server = HttpServer("streamable-http", {"NOTE_FILE": str(tmp_path / "note.txt")})
    server.start()
    yield server
    server.stop()


def named(receiver: OtlpReceiver) -> dict[str, list[Any]]:
    by_name: dict[str, list[Any]] = {}
    for s in receiver.spans:
        by_name.setdefault(s.name, []).append(s)
    return by_name


async def control_post(port: int, path: str, body: Any, headers: dict[str, str]) -> Any:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.post(
            f"http://127.0.0.1:{port}/control{path}",
            json=body,
            headers={"Authorization": f"Bearer {TOKEN}", **headers},
        ) as response,
    ):
        assert response.status == 200, await response.text()
        return await response.json()


@pytest.mark.timeout(90)
async def test_control_invoke_and_actions_are_root_spans_continuing_the_caller(
    make_agent: AgentFactory, fake: FakeOpenAI, receiver: OtlpReceiver
) -> None:
    agent = traced_agent(make_agent, fake, receiver.url)
    config = agent / "fastagent.toml"
    config.write_text("session_control = true\n" + config.read_text())
    fake.answer_always(openai_reply("an answer", usage=(10, 2)))
    env = {**FAST, "FASTAGENT_CONTROL_TOKEN": TOKEN}
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env=env) as server:
        port = await server.port()
        ran = await control_post(port, "/invoke", {"session": "ops-1", "text": "hi", "detach": True}, CALLER)
        assert ran["ok"] is True, ran
        await receiver.wait_for(lambda: "invoke_agent" in named(receiver))
        compacted = await control_post(port, "/sessions/ops-1/actions", {"type": "compact"}, CALLER)
        assert compacted["ok"] is True, compacted
        idle = {"type": "follow_up", "prompt": {"text": "and then?"}}
        refused = await control_post(port, "/sessions/ops-1/actions", idle, {})
        assert refused["error"]["code"] == "no_active_run"
        bad = await control_post(port, "/dispatch", {"session": "ops-1", "command": {"type": "nope"}}, {})
        assert bad["error"]["code"] == "invalid_command"
        await receiver.wait_for(lambda: "POST /control/dispatch" in named(receiver))
    by_name = named(receiver)
    [invoke] = by_name["POST /control/invoke"]
    [turn] = by_name["invoke_agent"]
    assert invoke.trace_id.hex() == CALLER_TRACE and invoke.parent_span_id.hex() == CALLER_SPAN
    assert attributes(invoke.attributes)["fastagent.trigger"] == "control" and invoke.kind == 2  # SERVER
    assert turn.parent_span_id == invoke.span_id  # the detached run still belongs to the request's trace
    actions = {attributes(s.attributes)["fastagent.control.action"]: s for s in by_name[ACTIONS]}
    compact, follow_up = actions["compact"], actions["follow_up"]
    assert compact.trace_id.hex() == CALLER_TRACE and compact.parent_span_id.hex() == CALLER_SPAN
    assert attributes(compact.attributes) == {
        **attributes(compact.attributes),
        "fastagent.trigger": "control",
        "gen_ai.conversation.id": "ops-1",
    }
    assert compact.status.code != 2
    # the compaction's model request is the action's child, and the provider got its trace
    chats = {s.parent_span_id: s for s in by_name["chat small"]}
    summary = chats[compact.span_id]
    assert fake.requests[-1].headers["traceparent"] == f"00-{CALLER_TRACE}-{summary.span_id.hex()}-01"
    # a refused action: its own trace (no header), the refusal as the status and error.type
    assert follow_up.trace_id.hex() != CALLER_TRACE and not follow_up.parent_span_id
    assert follow_up.status.code == 2 and "no active run" in follow_up.status.message
    assert attributes(follow_up.attributes)["error.type"] == "no_active_run"
    [dispatch] = by_name["POST /control/dispatch"]
    assert dispatch.status.code == 2 and attributes(dispatch.attributes)["error.type"] == "invalid_command"
    assert attributes(dispatch.attributes)["fastagent.control.action"] == "nope"


@pytest.mark.timeout(90)
async def test_a_schedule_fire_is_a_root_span_over_its_turn(
    make_agent: AgentFactory, fake: FakeOpenAI, receiver: OtlpReceiver
) -> None:
    agent = traced_agent(make_agent, fake, receiver.url)
    fake.answer_always(openai_reply("digest sent", usage=(10, 2)))
    schedule(agent, "digest", "send the digest")
    slot = next_nine()
    claim_yesterday(agent, "digest", slot)
    env = {**FAST, **clock_env(slot, 3)}
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env=env) as server:
        await server.port()
        await server.wait_for(r"\[schedule\] digest completed", within=30)
        await receiver.wait_for(lambda: "schedule fire" in named(receiver))
    by_name = named(receiver)
    [root] = by_name["schedule fire"]
    [turn] = by_name["invoke_agent"]
    assert not root.parent_span_id and root.kind == 1  # a new trace, INTERNAL
    assert attributes(root.attributes) == {
        **attributes(root.attributes),
        "fastagent.trigger": "schedule",
        "gen_ai.conversation.id": "schedule:digest",
    }
    assert turn.parent_span_id == root.span_id
    assert by_name["chat small"][0].parent_span_id == turn.span_id


@pytest.mark.timeout(90)
async def test_a_remote_mcp_call_carries_its_tool_spans_traceparent(
    make_agent: AgentFactory, fake: FakeOpenAI, receiver: OtlpReceiver, mcp_server: HttpServer
) -> None:
    extra = f'[mcp_servers.remote]\nurl = "{mcp_server.url}"\n'
    agent = traced_agent(make_agent, fake, receiver.url, extra=extra)
    fake.enqueue_stream(
        openai_reply(tool_calls=[FakeCall("remote__header", {"name": "traceparent"}, "c1")], usage=(10, 2))
    )
    fake.enqueue_stream(openai_reply("done", usage=(12, 1)))
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env=FAST) as server:
        port = await server.port()
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
            http.post(
                f"http://127.0.0.1:{port}/invoke",
                json={"session": "m1", "text": "which trace?"},
                headers=CALLER,
            ) as response,
        ):
            assert response.status == 200
            await response.read()
        await receiver.wait_for(lambda: "execute_tool remote__header" in named(receiver))
    [tool] = named(receiver)["execute_tool remote__header"]
    assert tool.trace_id.hex() == CALLER_TRACE
    # what the MCP server saw in its HTTP request's header, as the tool's result the model got back
    results = [m for m in fake.requests[1].body["messages"] if m.get("role") == "tool"]
    assert [json.dumps(m["content"]) for m in results] == [
        json.dumps(f"00-{CALLER_TRACE}-{tool.span_id.hex()}-01")
    ]
