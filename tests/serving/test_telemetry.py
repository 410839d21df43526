"""OpenTelemetry against a real OTLP/HTTP receiver (decoded with ``opentelemetry-proto``), through
the real ``fastagent start`` and a fake provider on the real wire: the span tree of a tool turn,
the GenAI attribute names, the caller's ``traceparent`` continued into the model request's header,
no content by default, metrics; a dead collector is one warning and never a failed turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import AgentFactory
from tests.fakes.fake_providers import FakeCall, FakeOpenAI, openai_reply
from tests.serving.conftest import sse_events
from tests.serving.otlp_receiver import OtlpReceiver, attributes
from tests.serving.serving_proc import ServerProcess, free_port

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
PROMPT = "Please read notes.txt — a secret-ish prompt"
FAST = {"OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_METRIC_EXPORT_INTERVAL": "200"}


@pytest.fixture
async def receiver() -> AsyncIterator[OtlpReceiver]:
    async with OtlpReceiver() as server:
        yield server


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def traced_agent(make_agent: AgentFactory, fake: FakeOpenAI, endpoint: str, extra: str = "") -> Path:
    models = {
        "providers": {
            "local": {
                "baseUrl": fake.base_url,
                "models": [{"id": "small", "cost": {"input": 2, "output": 10}}],
            }
        }
    }
    config = f'coding_tools = ["read"]\n[telemetry]\notlp_endpoint = "{endpoint}"\n{extra}'
    return make_agent(
        {"models.json": json.dumps(models), "notes.txt": "the notes body"}, model="local/small", config=config
    )


async def post_invoke(port: int, session: str, text: str, headers: dict[str, str] | None = None) -> list[Any]:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.post(
            f"http://127.0.0.1:{port}/invoke", json={"session": session, "text": text}, headers=headers
        ) as response,
    ):
        assert response.status == 200, await response.text()
        return sse_events(await response.text())


def tool_turn(fake: FakeOpenAI) -> None:
    fake.enqueue_stream(
        openai_reply(tool_calls=[FakeCall("read", {"path": "notes.txt"}, "c1")], usage=(1000, 500))
    )
    fake.enqueue_stream(openai_reply("The notes say hi.", usage=(1200, 20)))


@pytest.mark.timeout(90)
async def test_a_tool_turn_is_one_trace_continuing_the_callers(
    make_agent: AgentFactory, fake: FakeOpenAI, receiver: OtlpReceiver
) -> None:
    agent = traced_agent(make_agent, fake, receiver.url)
    tool_turn(fake)
    env = {
        **FAST,
        "OTEL_SERVICE_NAME": "support-bot",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
    }
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env=env) as server:
        port = await server.port()
        events = await post_invoke(
            port, "ops-7", PROMPT, {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
        )
        assert events[-1].type == "completed", events
        await receiver.wait_for(lambda: any(s.name == "POST /invoke" for s in receiver.spans))
        await receiver.wait_for(lambda: any(m.name == "fastagent.turns" for m in receiver.metrics))
    assert "cannot export" not in server.text
    assert set(receiver.content_types) == {"application/x-protobuf"}
    spans = {s.span_id.hex(): s for s in receiver.spans}
    assert {s.trace_id.hex() for s in spans.values()} == {CALLER_TRACE}  # one trace: the caller's
    by_name: dict[str, list[Any]] = {}
    for s in spans.values():
        by_name.setdefault(s.name, []).append(s)
    [root] = by_name["POST /invoke"]
    [turn] = by_name["invoke_agent"]
    chats = sorted(by_name["chat small"], key=lambda s: s.start_time_unix_nano)
    [tool] = by_name["execute_tool read"]
    assert root.parent_span_id.hex() == CALLER_SPAN and root.kind == 2  # SERVER
    assert turn.parent_span_id == root.span_id
    assert len(chats) == 2 and all(c.parent_span_id == turn.span_id and c.kind == 3 for c in chats)  # CLIENT
    assert tool.parent_span_id == turn.span_id
    assert (
        chats[0].end_time_unix_nano
        <= tool.start_time_unix_nano
        <= tool.end_time_unix_nano
        <= chats[1].start_time_unix_nano
    )
    first = attributes(chats[0].attributes)
    assert first["gen_ai.operation.name"] == "chat"
    assert (first["gen_ai.provider.name"], first["gen_ai.request.model"]) == ("local", "small")
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (1000, 500)
    assert first["gen_ai.response.finish_reasons"] == ["toolUse"]
    assert first["gen_ai.conversation.id"] == "ops-7"
    assert first["fastagent.cost.usd"] == pytest.approx(0.007)
    tool_attrs = attributes(tool.attributes)
    assert tool_attrs == {
        **tool_attrs,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "read",
        "gen_ai.tool.call.id": "c1",
    }
    turn_attrs = attributes(turn.attributes)
    assert (
        turn_attrs["gen_ai.operation.name"] == "invoke_agent"
        and turn_attrs["gen_ai.conversation.id"] == "ops-7"
    )
    assert turn_attrs["gen_ai.usage.input_tokens"] == 2200
    assert attributes(root.attributes)["fastagent.trigger"] == "http"
    # the model requests carry the trace, each with its own chat span as the parent
    sent = [r.headers["traceparent"] for r in fake.requests]
    assert sent == [f"00-{CALLER_TRACE}-{c.span_id.hex()}-01" for c in chats]
    # no content by default: neither the prompt, the answer, the tool arguments nor its result
    everything = b"".join(receiver.bodies)
    for text in ("secret-ish", "The notes say hi", "notes.txt", "the notes body"):
        assert text.encode() not in everything
    assert not any(
        k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg", "gen_ai.tool.call.res"))
        for s in spans.values()
        for k in attributes(s.attributes)
    )
    resource = receiver.resources[0]
    assert resource["service.name"] == "support-bot" and resource["deployment.environment"] == "test"
    metrics = {m.name: m for m in receiver.metrics}
    turns = metrics["fastagent.turns"].sum
    assert turns.is_monotonic and [(attributes(p.attributes), p.as_double) for p in turns.data_points] == [
        ({"outcome": "completed"}, 1.0)
    ]
    tokens = metrics["gen_ai.client.token.usage"].histogram.data_points
    assert sum(p.sum for p in tokens) == 1000 + 500 + 1200 + 20
    assert metrics["gen_ai.client.operation.duration"].histogram.data_points[0].count == 2


@pytest.mark.timeout(90)
async def test_capture_content_and_a_failed_turns_status(
    make_agent: AgentFactory, fake: FakeOpenAI, receiver: OtlpReceiver
) -> None:
    agent = traced_agent(make_agent, fake, receiver.url, "capture_content = true\n")
    tool_turn(fake)
    fake.enqueue_error(400, {"error": {"message": "bad request: unsupported thing"}})
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env=FAST) as server:
        port = await server.port()
        assert (await post_invoke(port, "s1", PROMPT))[-1].type == "completed"
        failed = (await post_invoke(port, "s2", "again"))[-1]
        assert failed.type == "failed"
        await receiver.wait_for(lambda: len([s for s in receiver.spans if s.name == "POST /invoke"]) == 2)
    traces = {s.trace_id for s in receiver.spans}
    assert len(traces) == 2  # no traceparent: a trace of its own per turn
    everything = b"".join(receiver.bodies)
    assert b"secret-ish" in everything and b"the notes body" in everything
    [bad] = [s for s in receiver.spans if s.name == "invoke_agent" and s.status.code == 2]
    assert attributes(bad.attributes)["error.type"] == "model_error"
    assert "unsupported thing" in bad.status.message


@pytest.mark.timeout(90)
async def test_a_dead_collector_is_one_warning_and_turns_complete(
    make_agent: AgentFactory, fake: FakeOpenAI
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    agent = traced_agent(make_agent, fake, dead)
    fake.answer_always(openai_reply("ok", usage=(10, 2)))
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env=FAST) as server:
        port = await server.port()
        for n in range(3):
            assert (await post_invoke(port, f"s{n}", "hi"))[-1].type == "completed"
        await server.wait_for("cannot export to")
        assert (await post_invoke(port, "s9", "hi"))[-1].type == "completed"
    assert server.count("cannot export to") == 1, server.text


async def test_telemetry_off_sends_no_traceparent_and_loads_nothing(
    make_agent: AgentFactory, fake: FakeOpenAI
) -> None:
    models = {"providers": {"local": {"baseUrl": fake.base_url, "models": [{"id": "small"}]}}}
    agent = make_agent(
        {"models.json": json.dumps(models)}, model="local/small", config="coding_tools = false\n"
    )
    fake.answer_always(openai_reply("ok"))
    async with ServerProcess.spawn(
        "start", str(agent), "--port", "0", env={"OTEL_EXPORTER_OTLP_ENDPOINT": ""}
    ) as server:
        port = await server.port()
        assert (await post_invoke(port, "s", "hi", {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}))[
            -1
        ].type == "completed"
    assert "traceparent" not in fake.requests[0].headers


def test_off_imports_neither_the_exporter_nor_opentelemetry(make_agent: AgentFactory) -> None:
    agent = make_agent()
    probe = (
        "import sys\n"
        "from fastagent_cli.assembly import open_agent_dir\n"
        f"opened = open_agent_dir({str(agent)!r})\n"
        "wanted = ('opentelemetry', 'fastagent_cli.telemetry.exporter')\n"
        "loaded = [m for m in sys.modules if m.startswith(wanted)]\n"
        "print(loaded)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.timeout(90)
async def test_an_openai_face_turn_is_one_trace_under_its_own_root(
    make_agent: AgentFactory, fake: FakeOpenAI, receiver: OtlpReceiver
) -> None:
    agent = traced_agent(make_agent, fake, receiver.url, extra="[http]\nopenai = true\n")
    fake.enqueue_stream(openai_reply("hello from the face", usage=(100, 5)))
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env=FAST) as server:
        port = await server.port()
        body = {"model": agent.name, "messages": [{"role": "user", "content": "hi"}]}
        headers = {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
            http.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, headers=headers) as response,
        ):
            assert response.status == 200, await response.text()
        await receiver.wait_for(lambda: any(s.name == "invoke_agent" for s in receiver.spans))
        await receiver.wait_for(lambda: any(s.name == "POST /v1/chat/completions" for s in receiver.spans))
    spans = {s.span_id.hex(): s for s in receiver.spans}
    by_name = {s.name: s for s in spans.values()}
    root, turn = by_name["POST /v1/chat/completions"], by_name["invoke_agent"]
    assert root.trace_id.hex() == CALLER_TRACE and root.parent_span_id.hex() == CALLER_SPAN
    assert attributes(root.attributes)["fastagent.trigger"] == "openai"
    assert turn.parent_span_id == root.span_id and by_name["chat small"].parent_span_id == turn.span_id


@pytest.mark.timeout(90)
async def test_a_retry_is_a_span_event_and_the_metrics_count_failures_spend_and_runs(
    make_agent: AgentFactory, fake: FakeOpenAI, receiver: OtlpReceiver
) -> None:
    agent = traced_agent(make_agent, fake, receiver.url)
    fake.enqueue_error(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0"})
    fake.enqueue_stream(openai_reply("after a retry", usage=(1000, 500)))
    fake.enqueue_error(400, {"error": {"message": "bad request: unsupported thing"}})
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env=FAST) as server:
        port = await server.port()
        assert (await post_invoke(port, "r1", "hi"))[-1].type == "completed"
        assert (await post_invoke(port, "r2", "again"))[-1].type == "failed"
        await receiver.wait_for(lambda: len([s for s in receiver.spans if s.name == "invoke_agent"]) == 2)
    [retried] = [s for s in receiver.spans if s.name == "chat small" and s.events]
    [event] = retried.events
    assert event.name == "retry" and retried.status.code != 2  # retried, then answered
    assert attributes(event.attributes) == {
        **attributes(event.attributes),
        "fastagent.retry.attempt": 1,
        "fastagent.retry.delay_ms": 0,
    }
    assert "slow down" in attributes(event.attributes)["error.message"]
    last = {m.name: m for m in receiver.metrics}  # cumulative: the last export has every turn

    def points(name: str) -> list[tuple[dict[str, Any], float]]:
        return sorted(((attributes(p.attributes), p.as_double) for p in last[name].sum.data_points), key=str)

    assert points("fastagent.turns") == [({"outcome": "completed"}, 1.0), ({"outcome": "failed"}, 1.0)]
    assert points("fastagent.turn.failures") == [({"error.type": "model_error"}, 1.0)]
    assert (
        points("fastagent.runs.active") == [({}, 0.0)] and not last["fastagent.runs.active"].sum.is_monotonic
    )
    [(cost_attrs, cost)] = points("fastagent.cost")
    assert cost_attrs == {"gen_ai.request.model": "small"} and cost == pytest.approx(0.007)
