"""Structured output against the fake OpenAI, Responses and Anthropic servers: the schema goes the
API's native way, the answer is checked, a mismatch is sent back (bounded), and a model that keeps
violating ends in ``failed{code: invalid_output}``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, Failed, Prompt, Scope
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.tools.define import tool
from tests.conformance.suite import drain
from tests.fakes.fake_providers import FakeAnthropic, FakeOpenAI, FakeProvider, FakeResponses
from tests.fakes.responses_builders import responses_reply
from tests.fakes.wire_builders import FakeCall, anthropic_reply, openai_reply

PERSON = {
    "title": "Person",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}

_OPEN: list[EngineAgent] = []


@tool
def lookup(name: str) -> str:
    """Look a person up."""
    return f"{name} is 36"


@pytest.fixture(autouse=True)
async def close_agents() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def agent_for(fake: FakeProvider, api: str, tmp_path: Path, *, thinking: str = "off") -> EngineAgent:
    models = tmp_path / "models.json"
    entry = {"baseUrl": fake.base_url, "api": api, "apiKey": "k", "models": [{"id": "m", "reasoning": True}]}
    models.write_text(json.dumps({"providers": {"fake": entry}}))
    agent = create_agent(
        model="fake/m",
        tools=[lookup],
        registry=ModelRegistry(models),
        retry=RetryPolicy(max_retries=0, base_delay_ms=1, max_delay_ms=1),
        thinking_level=thinking,  # type: ignore[arg-type]
    )
    _OPEN.append(agent)
    return agent


async def run(agent: EngineAgent, schema: dict[str, Any] = PERSON, session: str = "s") -> Completed | Failed:
    events = await drain(agent.invoke(Scope(session), Prompt("Who is Ada?", output_schema=schema)))
    terminal = events[-1]
    assert isinstance(terminal, Completed | Failed)
    return terminal


async def test_openai_native_response_format_and_the_validated_object(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_stream(openai_reply('{"name": "Ada", "age": 36}'))
        terminal = await run(agent_for(fake, "openai-completions", tmp_path))
        assert isinstance(terminal, Completed)
        assert terminal.data["output"] == {"name": "Ada", "age": 36}
        body = fake.requests[0].body
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "Person", "schema": PERSON, "strict": True},
        }
        assert "JSON Schema" in body["messages"][0]["content"]


async def test_openai_answer_that_violates_is_sent_back_then_accepted(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_stream(openai_reply('{"name": "Ada", "age": "thirty-six"}'))
        fake.enqueue_stream(openai_reply('{"name": "Ada", "age": 36}'))
        terminal = await run(agent_for(fake, "openai-completions", tmp_path))
        assert isinstance(terminal, Completed) and terminal.data["output"]["age"] == 36
        retry = fake.requests[1].body["messages"][-1]
        assert retry["role"] == "user"
        assert "$.age: 'thirty-six' is not of type 'integer'" in json.dumps(retry["content"])


async def test_a_model_that_keeps_violating_fails_with_invalid_output(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        for _ in range(3):
            fake.enqueue_stream(openai_reply("Ada is 36."))
        fake.enqueue_stream(openai_reply('{"name": "never asked", "age": 1}'))
        terminal = await run(agent_for(fake, "openai-completions", tmp_path))
        assert isinstance(terminal, Failed) and terminal.code == "invalid_output"
        assert not terminal.retryable and "after 3 attempts" in terminal.details
        assert len(fake.requests) == 3  # bounded: the fourth answer is never asked for


async def test_responses_api_text_format(tmp_path: Path) -> None:
    async with FakeResponses() as fake:
        fake.enqueue_stream(responses_reply('{"name": "Ada", "age": 36}'))
        terminal = await run(agent_for(fake, "openai-responses", tmp_path))
        assert isinstance(terminal, Completed) and terminal.data["output"]["name"] == "Ada"
        fmt = fake.requests[0].body["text"]["format"]
        assert fmt == {"type": "json_schema", "name": "Person", "schema": PERSON, "strict": True}


async def test_anthropic_tool_forcing(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        fake.enqueue_stream(anthropic_reply(tool_calls=[FakeCall("lookup", {"name": "Ada"}, "t1")]))
        fake.enqueue_stream(
            anthropic_reply(tool_calls=[FakeCall("final_result", {"name": "Ada", "age": 36}, "t2")])
        )
        agent = agent_for(fake, "anthropic-messages", tmp_path)
        terminal = await run(agent)
        assert isinstance(terminal, Completed) and terminal.data["output"] == {"name": "Ada", "age": 36}
        first = fake.requests[0].body
        assert first["tool_choice"] == {"type": "any"}  # it has a tool of its own to call first
        output_tool = next(t for t in first["tools"] if t["name"] == "final_result")
        assert output_tool["input_schema"] == PERSON
        # The session stays valid: the output call got its tool result.
        fake.enqueue_stream(anthropic_reply("Anything else?"))
        events = await drain(agent.invoke(Scope("s"), Prompt("thanks")))
        assert isinstance(events[-1], Completed)
        history = fake.requests[2].body["messages"]
        results = [b for m in history if m["role"] == "user" for b in m["content"] if isinstance(b, dict)]
        assert any(b.get("type") == "tool_result" and b["tool_use_id"] == "t2" for b in results)
        assert "tool_choice" not in fake.requests[2].body  # a plain turn is not forced


async def test_anthropic_forced_tool_without_tools_and_a_rejected_call(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        fake.enqueue_stream(anthropic_reply(tool_calls=[FakeCall("final_result", {"name": "Ada"}, "t1")]))
        fake.enqueue_stream(
            anthropic_reply(tool_calls=[FakeCall("final_result", {"name": "Ada", "age": 36}, "t2")])
        )
        models = tmp_path / "models.json"
        entry = {
            "baseUrl": fake.base_url,
            "api": "anthropic-messages",
            "apiKey": "k",
            "models": [{"id": "m"}],
        }
        models.write_text(json.dumps({"providers": {"fake": entry}}))
        agent = create_agent(model="fake/m", registry=ModelRegistry(models))
        _OPEN.append(agent)
        terminal = await run(agent)
        assert isinstance(terminal, Completed) and terminal.data["output"]["age"] == 36
        assert fake.requests[0].body["tool_choice"] == {"type": "tool", "name": "final_result"}
        sent_back = fake.requests[1].body["messages"][-1]["content"][0]
        assert sent_back["type"] == "tool_result" and sent_back["is_error"] is True
        assert "'age' is a required property" in json.dumps(sent_back["content"])


async def test_anthropic_with_thinking_is_not_forced_and_a_text_answer_counts(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        fake.enqueue_stream(anthropic_reply('```json\n{"name": "Ada", "age": 36}\n```', thinking="hm"))
        terminal = await run(agent_for(fake, "anthropic-messages", tmp_path, thinking="low"))
        assert isinstance(terminal, Completed) and terminal.data["output"] == {"name": "Ada", "age": 36}
        assert fake.requests[0].body["tool_choice"] == {"type": "auto"}  # the API forbids forcing then


async def test_an_unusable_schema_fails_before_any_request(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        agent = agent_for(fake, "openai-completions", tmp_path)
        terminal = await run(agent, {"type": "object", "properties": {"a": {"type": "nope"}}})
        assert isinstance(terminal, Failed) and terminal.code == "invalid_schema"
        assert "schema is not usable" in terminal.details
        assert not fake.requests
        terminal = await run(agent, {"type": "array"}, session="t")
        assert isinstance(terminal, Failed) and "must be a JSON object" in terminal.details
