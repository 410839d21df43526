"""The partial answer of an aborted run (and of a stream that failed after streaming text) is recorded
as pi records it (``stopReason`` ``aborted``/``error`` with an ``errorMessage``) and never goes back
to a model: against the real wire clients of every API, talking to local fake servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.assembly.control import session_control
from fastagent_cli.contract import ABORTED_CODE, AgentEvent, Completed, Failed, Text
from fastagent_cli.control import SessionEvent
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.turn import ABORTED_MESSAGE
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.sessions.store import FileSessionStore
from tests.fakes.fake_providers import FakeAnthropic, FakeOpenAI, FakeProvider, FakeResponses
from tests.fakes.responses_builders import responses_reply
from tests.fakes.wire_builders import anthropic_reply, openai_reply

PARTIAL = "The first half of an answer"

Reply = Callable[[str], list[dict[str, Any]]]


def _openai_text(event: dict[str, Any]) -> bool:
    return bool(event.get("choices") and event["choices"][0]["delta"].get("content"))


def _anthropic_text(event: dict[str, Any]) -> bool:
    return event.get("type") == "content_block_delta" and event["delta"].get("type") == "text_delta"


def _responses_text(event: dict[str, Any]) -> bool:
    return event.get("type") == "response.output_text.delta"


WIRES: list[tuple[type[FakeProvider], Reply, Callable[[dict[str, Any]], bool]]] = [
    (FakeOpenAI, lambda text: openai_reply(text), _openai_text),
    (FakeAnthropic, lambda text: anthropic_reply(text), _anthropic_text),
    (FakeResponses, lambda text: responses_reply(text), _responses_text),
]
IDS = [fake.api for fake, _, _ in WIRES]


def up_to_the_text(
    events: list[dict[str, Any]], is_text: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """``events`` up to and including the last text delta: the answer streamed, not finished."""
    last = max(i for i, event in enumerate(events) if is_text(event))
    return events[: last + 1]


@pytest.fixture
async def opened() -> AsyncIterator[list[EngineAgent]]:
    """The agents a test made, closed after it."""
    agents: list[EngineAgent] = []
    yield agents
    for agent in agents:
        await agent.aclose()


def agent_for(fake: FakeProvider, tmp_path: Path, opened: list[EngineAgent]) -> EngineAgent:
    models = tmp_path / "models.json"
    provider = {
        "baseUrl": fake.base_url,
        "api": fake.api,
        "apiKey": "test-key",
        "models": [{"id": "fake-model"}],
    }
    models.write_text(json.dumps({"providers": {"fake": provider}}))
    agent = create_agent(
        model="fake/fake-model",
        registry=ModelRegistry(models),
        retry=RetryPolicy(max_retries=2, base_delay_ms=1, max_delay_ms=50),
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        cwd=tmp_path,
    )
    opened.append(agent)
    return agent


async def collect_events(agent: EngineAgent, session: str) -> list[SessionEvent]:
    seen: list[SessionEvent] = []
    async with agent.hub.subscribe(session) as events:
        async for event in events:
            seen.append(event)
            if event.type == "run_settled":
                break
    return seen


async def recorded_messages(tmp_path: Path, session: str) -> list[dict[str, Any]]:
    """The session's message entries as a fresh process would read them from disk."""
    record = await FileSessionStore(tmp_path / "sessions", tmp_path).read(session)
    assert record is not None
    return [dict(entry["message"]) for entry in record.entries if entry["type"] == "message"]


def request_text(fake: FakeProvider) -> str:
    return json.dumps(fake.last_request.body)


async def abort_after_text(agent: EngineAgent, session: str, prompt: str) -> list[AgentEvent]:
    """Invoke, wait until all of PARTIAL has streamed, abort through the control plane, drain."""
    stream = agent.invoke(session, prompt)
    events: list[AgentEvent] = []
    streamed = ""
    async for event in stream:
        events.append(event)
        streamed += event.delta if isinstance(event, Text) else ""
        if streamed == PARTIAL:
            break
    assert (await session_control(agent).sessions.get(session).abort()).ok
    events += [event async for event in stream]
    return events


@pytest.mark.parametrize(("fake_type", "reply", "is_text"), WIRES, ids=IDS)
async def test_an_aborted_answer_is_recorded_and_never_sent_again(
    fake_type: type[FakeProvider],
    reply: Reply,
    is_text: Callable[[dict[str, Any]], bool],
    tmp_path: Path,
    opened: list[EngineAgent],
) -> None:
    async with fake_type() as fake:
        fake.enqueue_hold(up_to_the_text(reply(PARTIAL), is_text))
        agent = agent_for(fake, tmp_path, opened)
        watching = asyncio.create_task(collect_events(agent, "s"))
        await asyncio.sleep(0)
        events = await asyncio.wait_for(abort_after_text(agent, "s", "first question"), 20)
        assert isinstance(events[-1], Failed) and events[-1].code == ABORTED_CODE
        assert await fake.wait_disconnect(5.0)

        messages = await recorded_messages(tmp_path, "s")
        assert [m["role"] for m in messages] == ["user", "assistant"]
        partial = messages[-1]
        assert partial["stopReason"] == "aborted" and partial["errorMessage"] == ABORTED_MESSAGE
        assert partial["content"] == [{"type": "text", "text": PARTIAL}]
        assert (partial["provider"], partial["model"], partial["api"]) == ("fake", "fake-model", fake.api)

        seen = await asyncio.wait_for(watching, 10)
        finished = [e for e in seen if e.type == "message_finished"]
        record = await FileSessionStore(tmp_path / "sessions", tmp_path).read("s")
        assert record is not None
        assert [e.data for e in finished] == [{"entryId": record.entries[-1]["id"], "stopReason": "aborted"}]
        assert seen[-1].data["status"] == "aborted"

        fake.enqueue_stream(reply("second answer"))
        again = await drain_all(agent.invoke("s", "second question"))
        assert isinstance(again[-1], Completed)
        sent = request_text(fake)
        assert "first question" in sent and "second question" in sent
        assert PARTIAL not in sent, "an aborted answer must never go back to a model"
        roles = [m["role"] for m in await recorded_messages(tmp_path, "s")]
        assert roles == ["user", "assistant", "user", "assistant"]


async def test_a_stream_that_fails_after_text_records_the_partial_answer_as_an_error(
    tmp_path: Path, opened: list[EngineAgent]
) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_cut(up_to_the_text(openai_reply(PARTIAL), _openai_text))
        agent = agent_for(fake, tmp_path, opened)
        events = await drain_all(agent.invoke("c", "first question"))
        assert isinstance(events[-1], Failed) and events[-1].retryable
        partial = (await recorded_messages(tmp_path, "c"))[-1]
        assert partial["role"] == "assistant" and partial["stopReason"] == "error"
        assert partial["content"] == [{"type": "text", "text": PARTIAL}]
        assert partial["errorMessage"] and "test-key" not in partial["errorMessage"]

        fake.enqueue_stream(openai_reply("whole"))
        assert isinstance((await drain_all(agent.invoke("c", "second question")))[-1], Completed)
        assert PARTIAL not in request_text(fake) and "first question" in request_text(fake)


async def test_an_abort_before_any_content_records_no_assistant_message(
    tmp_path: Path, opened: list[EngineAgent]
) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_hold(openai_reply("never")[:1])  # the role-only chunk: nothing to keep
        agent = agent_for(fake, tmp_path, opened)
        async with agent.hub.subscribe("e") as watched:
            running = asyncio.create_task(drain_all(agent.invoke("e", "hi")))
            await asyncio.wait_for(fake.wait_request(), 10)
            await asyncio.sleep(0.2)  # the role chunk is read: it carries nothing to keep
            assert (await session_control(agent).sessions.get("e").abort()).ok
            seen: list[SessionEvent] = []
            async for event in watched:
                seen.append(event)
                if event.type == "run_settled":
                    break
        events = await asyncio.wait_for(running, 20)
        assert isinstance(events[-1], Failed) and events[-1].code == ABORTED_CODE
        assert [m["role"] for m in await recorded_messages(tmp_path, "e")] == ["user"]
        assert not [e for e in seen if e.type in ("message_started", "message_finished")]
        assert seen[-1].data["status"] == "aborted"


async def drain_all(stream: AsyncIterator[AgentEvent]) -> list[AgentEvent]:
    return [event async for event in stream]
