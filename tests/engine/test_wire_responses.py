"""The engine over the Responses wire client, through the same scenarios the chat-completions and
Anthropic clients pass in ``test_wire_end_to_end``: a tool round trip with reasoning and usage,
retries only where allowed, one terminal. ``openai-responses`` runs as a ``models.json`` provider
with an API key; ``openai-codex-responses`` as the built-in ``openai-codex`` provider re-targeted
at the fake, with a subscription login in ``auth.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, Failed, Retrying, Thinking, ToolEnded, ToolStarted
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.models.registry import ModelRegistry
from tests.conformance.suite import drain
from tests.engine.test_wire_end_to_end import (  # noqa: F401 - close_agents is an autouse fixture
    _OPEN,
    FAST_RETRY,
    agent_for,
    close_agents,
    get_weather,
    single_terminal,
    text_of,
)
from tests.fakes.fake_providers import FakeCall, FakeCodex, FakeResponses
from tests.fakes.responses_builders import responses_error_event, responses_reply
from tests.fakes.tokens import codex_jwt

WIRES = ["openai-responses", "openai-codex-responses"]


def codex_agent(fake: FakeCodex, tmp_path: Path, token: str) -> EngineAgent:
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"providers": {"openai-codex": {"baseUrl": fake.base_url}}}))
    auth = tmp_path / "secrets" / "auth.json"
    auth.parent.mkdir(mode=0o700)
    entry = {
        "type": "oauth",
        "refresh": "rt-1",
        "access": token,
        "expires": 4_102_444_800_000,
        "accountId": "acct-1",
    }
    auth.write_text(json.dumps({"openai-codex": entry}))
    agent = create_agent(
        model="openai-codex/gpt-5.2-codex",
        tools=[get_weather],
        registry=ModelRegistry(models),
        retry=FAST_RETRY,
        thinking_level="low",
        auth_path=auth,
    )
    _OPEN.append(agent)
    return agent


class Wire:
    def __init__(self, api: str, tmp_path: Path) -> None:
        self.api = api
        self.tmp_path = tmp_path
        self.fake: FakeResponses = FakeCodex() if api == "openai-codex-responses" else FakeResponses()
        self.token = codex_jwt("acct-1")

    async def __aenter__(self) -> Wire:
        await self.fake.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.fake.stop()

    def agent(self) -> EngineAgent:
        if isinstance(self.fake, FakeCodex):
            return codex_agent(self.fake, self.tmp_path, self.token)
        return agent_for(self.fake, self.api, self.tmp_path)

    @property
    def key(self) -> str:
        return self.token if isinstance(self.fake, FakeCodex) else "test-key"


@pytest.mark.parametrize("api", WIRES)
async def test_tool_round_trip_with_reasoning_and_usage(tmp_path: Path, api: str) -> None:
    async with Wire(api, tmp_path) as wire:
        call = FakeCall("get_weather", {"city": "Paris"}, "call_1")
        wire.fake.enqueue_stream(
            responses_reply(reasoning=["Need the weather tool."], tool_calls=[call], usage=(40, 9))
        )
        wire.fake.enqueue_stream(
            responses_reply("It is 21 degrees in Paris.", reasoning=["Done."], usage=(70, 8))
        )
        events = await drain(wire.agent().invoke("w", "Weather in Paris?"))
        terminal = single_terminal(events)
        assert isinstance(terminal, Completed)
        assert "".join(e.delta for e in events if isinstance(e, Thinking)) == "Need the weather tool.Done."
        started = next(e for e in events if isinstance(e, ToolStarted))
        assert started.args == {"city": "Paris"} and started.name == "get_weather"
        ended = next(e for e in events if isinstance(e, ToolEnded))
        assert not ended.is_error and json.loads(ended.content[0]["text"])["temp"] == 21
        assert text_of(events) == "It is 21 degrees in Paris."
        assert terminal.data["usage"]["input"] == 110 and terminal.data["usage"]["output"] == 17
        second: dict[str, Any] = wire.fake.requests[1].body
        output = next(i for i in second["input"] if i.get("type") == "function_call_output")
        assert output["call_id"] == "call_1" and json.loads(output["output"])["city"] == "Paris"
        reasoning = [i for i in second["input"] if i.get("type") == "reasoning"]
        assert [r["summary"][0]["text"] for r in reasoning] == ["Need the weather tool."]
        assert wire.fake.requests[0].headers["authorization"] == f"Bearer {wire.key}"
        assert wire.fake.requests[0].body["reasoning"]["effort"] == "low"


@pytest.mark.parametrize("api", WIRES)
async def test_429_with_retry_after_then_500_then_success(tmp_path: Path, api: str) -> None:
    async with Wire(api, tmp_path) as wire:
        wire.fake.enqueue_error(429, headers={"Retry-After": "0"})
        wire.fake.enqueue_error(500)
        wire.fake.enqueue_stream(responses_reply("recovered"))
        events = await drain(wire.agent().invoke("r", "hi"))
        retries = [e for e in events if isinstance(e, Retrying)]
        assert [r.attempt for r in retries] == [1, 2] and retries[0].delay_ms == 0
        assert "429" in retries[0].reason and "500" in retries[1].reason
        assert isinstance(single_terminal(events), Completed) and text_of(events) == "recovered"
        assert len(wire.fake.requests) == 3


@pytest.mark.parametrize("api", WIRES)
async def test_401_is_not_retried_and_keeps_the_provider_message(tmp_path: Path, api: str) -> None:
    async with Wire(api, tmp_path) as wire:
        wire.fake.enqueue_error(
            401, {"error": {"message": "Incorrect API key provided: sk-***", "type": "x"}}
        )
        events = await drain(wire.agent().invoke("a", "hi"))
        terminal = single_terminal(events)
        assert isinstance(terminal, Failed) and not terminal.retryable
        assert "401" in terminal.details and "Incorrect API key provided" in terminal.details
        assert len(wire.fake.requests) == 1


@pytest.mark.parametrize("api", WIRES)
async def test_a_stream_cut_mid_answer_is_not_retried(tmp_path: Path, api: str) -> None:
    async with Wire(api, tmp_path) as wire:
        wire.fake.enqueue_cut(responses_reply("Half of an answ")[:6])
        wire.fake.enqueue_stream(responses_reply("a second answer that must never be appended"))
        events = await drain(wire.agent().invoke("c", "hi"))
        terminal = single_terminal(events)
        assert isinstance(terminal, Failed) and terminal.retryable
        assert text_of(events) and "second answer" not in text_of(events)
        assert len(wire.fake.requests) == 1


@pytest.mark.parametrize("api", WIRES)
async def test_a_cut_before_any_text_and_an_error_event_are_retried(tmp_path: Path, api: str) -> None:
    async with Wire(api, tmp_path) as wire:
        wire.fake.enqueue_cut(responses_reply("x")[:2])  # created, in_progress, then the socket closes
        wire.fake.enqueue_stream([responses_error_event("server_error", "The server had an error")])
        wire.fake.enqueue_stream(responses_reply("whole"))
        events = await drain(wire.agent().invoke("c", "hi"))
        assert [e.type for e in events].count("retrying") == 2
        assert isinstance(single_terminal(events), Completed) and text_of(events) == "whole"


async def test_a_non_retryable_error_event_fails_the_turn(tmp_path: Path) -> None:
    async with Wire("openai-responses", tmp_path) as wire:
        wire.fake.enqueue_stream(
            [responses_error_event("context_length_exceeded", "Your input exceeds the window")]
        )
        events = await drain(wire.agent().invoke("e", "hi"))
        terminal = single_terminal(events)
        assert isinstance(terminal, Failed) and not terminal.retryable
        assert terminal.details == "fake: context_length_exceeded: Your input exceeds the window"


@pytest.mark.parametrize("api", WIRES)
async def test_closing_the_stream_closes_the_http_request(tmp_path: Path, api: str) -> None:
    async with Wire(api, tmp_path) as wire:
        wire.fake.enqueue_hold(responses_reply("streaming...")[:6])
        agent = wire.agent()
        events = agent.invoke("hold", "hi")
        await events.__anext__()
        await events.aclose()
        assert await wire.fake.wait_disconnect(within=3.0)


def test_models_json_accepts_the_responses_api(tmp_path: Path) -> None:
    models = tmp_path / "models.json"
    provider = {
        "baseUrl": "http://127.0.0.1:9/v1",
        "api": "openai-responses",
        "apiKey": "k",
        "models": [{"id": "m"}],
    }
    models.write_text(json.dumps({"providers": {"proxy": provider}}))
    assert ModelRegistry(models).resolve("proxy/m").api == "openai-responses"
