"""The engine against local fake OpenAI and Anthropic servers sending the real wire format chunk by
chunk: the right events, retries only where allowed, exactly one terminal."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import (
    AgentEvent,
    Completed,
    Failed,
    Retrying,
    Text,
    Thinking,
    ToolEnded,
    ToolStarted,
)
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.tools.define import tool
from tests.conformance.suite import drain
from tests.fakes.fake_providers import FakeAnthropic, FakeOpenAI, FakeProvider
from tests.fakes.wire_builders import FakeCall, anthropic_error_event, anthropic_reply, openai_reply

FAST_RETRY = RetryPolicy(max_retries=2, base_delay_ms=1, max_delay_ms=50)


@tool
def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "temp": 21, "unit": unit}


_OPEN: list[EngineAgent] = []


@pytest.fixture(autouse=True)
async def close_agents() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def agent_for(fake: FakeProvider, api: str, tmp_path: Path, *, key: str = "test-key") -> EngineAgent:
    models = tmp_path / "models.json"
    models.write_text(
        json.dumps(
            {
                "providers": {
                    "fake": {
                        "baseUrl": fake.base_url,
                        "api": api,
                        "apiKey": key,
                        "models": [{"id": "fake-model", "reasoning": True}],
                    }
                }
            }
        )
    )
    agent = create_agent(
        model="fake/fake-model",
        tools=[get_weather],
        registry=ModelRegistry(models),
        retry=FAST_RETRY,
        thinking_level="low",
    )
    _OPEN.append(agent)
    return agent


def single_terminal(events: list[AgentEvent]) -> AgentEvent:
    terminals = [e for e in events if isinstance(e, Completed | Failed)]
    assert len(terminals) == 1 and events[-1] is terminals[0], events
    return terminals[0]


def text_of(events: list[AgentEvent]) -> str:
    return "".join(e.delta for e in events if isinstance(e, Text))


async def test_openai_tool_round_trip_with_reasoning_and_usage(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        call = FakeCall("get_weather", {"city": "Paris"}, "call_1")
        fake.enqueue_stream(
            openai_reply(reasoning="Need the weather tool.", tool_calls=[call], usage=(40, 9))
        )
        fake.enqueue_stream(openai_reply("It is 21 degrees in Paris.", reasoning="Done.", usage=(70, 8)))
        events = await drain(agent_for(fake, "openai-completions", tmp_path).invoke("w", "Weather in Paris?"))
        terminal = single_terminal(events)
        assert isinstance(terminal, Completed)
        assert "".join(e.delta for e in events if isinstance(e, Thinking)) == "Need the weather tool.Done."
        started = next(e for e in events if isinstance(e, ToolStarted))
        assert started.args == {"city": "Paris"} and started.name == "get_weather"
        ended = next(e for e in events if isinstance(e, ToolEnded))
        assert not ended.is_error and json.loads(ended.content[0]["text"])["temp"] == 21
        assert text_of(events) == "It is 21 degrees in Paris."
        assert terminal.data["usage"]["input"] == 110 and terminal.data["usage"]["output"] == 17
        second = fake.requests[1].body
        tool_message = next(m for m in second["messages"] if m["role"] == "tool")
        assert tool_message["tool_call_id"] == "call_1"
        assert fake.requests[0].headers["authorization"] == "Bearer test-key"
        assert fake.requests[0].body["reasoning_effort"] == "low"


async def test_openai_429_with_retry_after_then_500_then_success(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_error(429, headers={"Retry-After": "0"})
        fake.enqueue_error(500)
        fake.enqueue_stream(openai_reply("recovered"))
        events = await drain(agent_for(fake, "openai-completions", tmp_path).invoke("r", "hi"))
        retries = [e for e in events if isinstance(e, Retrying)]
        assert [r.attempt for r in retries] == [1, 2] and retries[0].delay_ms == 0
        assert "429" in retries[0].reason and "500" in retries[1].reason
        assert isinstance(single_terminal(events), Completed) and text_of(events) == "recovered"
        assert len(fake.requests) == 3


async def test_openai_401_is_not_retried_and_keeps_the_provider_message(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_error(401, {"error": {"message": "Incorrect API key provided: sk-***", "type": "x"}})
        events = await drain(agent_for(fake, "openai-completions", tmp_path, key="bad").invoke("a", "hi"))
        terminal = single_terminal(events)
        assert isinstance(terminal, Failed) and not terminal.retryable
        assert "401" in terminal.details and "Incorrect API key provided" in terminal.details
        assert "\n" not in terminal.details
        assert len(fake.requests) == 1


async def test_a_stream_cut_mid_answer_is_not_retried(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_cut(openai_reply("Half of an answ")[:3])
        fake.enqueue_stream(openai_reply("a second answer that must never be appended"))
        events = await drain(agent_for(fake, "openai-completions", tmp_path).invoke("c", "hi"))
        terminal = single_terminal(events)
        assert isinstance(terminal, Failed) and terminal.retryable
        assert "second answer" not in text_of(events)
        assert len(fake.requests) == 1


async def test_a_cut_before_any_text_is_retried(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_cut(openai_reply("x")[:1])  # the role-only chunk, then the socket closes
        fake.enqueue_stream(openai_reply("whole"))
        events = await drain(agent_for(fake, "openai-completions", tmp_path).invoke("c", "hi"))
        assert [e.type for e in events].count("retrying") == 1
        assert isinstance(single_terminal(events), Completed) and text_of(events) == "whole"


async def test_anthropic_thinking_tool_use_and_signature(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        call = FakeCall("get_weather", {"city": "Oslo", "unit": "celsius"}, "toolu_01")
        fake.enqueue_stream(anthropic_reply(thinking="Use the tool.", signature="sig-1", tool_calls=[call]))
        fake.enqueue_stream(anthropic_reply("Oslo: 21 degrees."))
        events = await drain(agent_for(fake, "anthropic-messages", tmp_path).invoke("o", "Oslo?"))
        assert isinstance(single_terminal(events), Completed)
        assert [e.type for e in events if e.type not in ("text", "thinking")] == [
            "tool_started",
            "tool_ended",
            "completed",
        ]
        assert "".join(e.delta for e in events if isinstance(e, Thinking)) == "Use the tool."
        assert text_of(events) == "Oslo: 21 degrees."
        second = fake.requests[1].body
        assistant = next(m for m in second["messages"] if m["role"] == "assistant")
        assert assistant["content"][0] == {
            "type": "thinking",
            "thinking": "Use the tool.",
            "signature": "sig-1",
        }
        assert assistant["content"][1]["type"] == "tool_use" and assistant["content"][1]["id"] == "toolu_01"
        result = second["messages"][-1]["content"][0]
        assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01"
        assert fake.requests[0].headers["x-api-key"] == "test-key"
        assert fake.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


async def test_anthropic_overloaded_error_event_is_retried(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        fake.enqueue_stream([anthropic_error_event("overloaded_error", "Overloaded")])
        fake.enqueue_stream(anthropic_reply("fine now"))
        events = await drain(agent_for(fake, "anthropic-messages", tmp_path).invoke("o", "hi"))
        assert [e.type for e in events].count("retrying") == 1
        assert isinstance(single_terminal(events), Completed)


async def test_anthropic_401(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        fake.enqueue_error(401, body)
        events = await drain(agent_for(fake, "anthropic-messages", tmp_path).invoke("a", "hi"))
        terminal = single_terminal(events)
        assert isinstance(terminal, Failed) and not terminal.retryable
        assert "invalid x-api-key" in terminal.details


@pytest.mark.parametrize("fake_cls", [FakeOpenAI, FakeAnthropic])
async def test_closing_the_stream_closes_the_http_request(
    tmp_path: Path, fake_cls: type[FakeProvider]
) -> None:
    api = "openai-completions" if fake_cls is FakeOpenAI else "anthropic-messages"
    async with fake_cls() as fake:
        first = openai_reply("streaming...")[:2] if fake_cls is FakeOpenAI else anthropic_reply("x")[:4]
        fake.enqueue_hold(first)
        agent = agent_for(fake, api, tmp_path)
        events = agent.invoke("hold", "hi")
        await events.__anext__()
        await events.aclose()
        assert await fake.wait_disconnect(within=3.0)
        await agent.aclose()
