"""The turn loop: tool rounds, concurrency, tool failures, the tool budget, retries."""

from __future__ import annotations

import asyncio
from typing import Any

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, Failed, Retrying, Text, ToolEnded, ToolStarted, collect
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.models.scripted import TOOL_BUDGET_NOTE, ScriptedModel, ScriptedRequest
from fastagent_cli.sessions.store import MemorySessionStore
from fastagent_cli.tools.define import tool
from tests.conformance.suite import drain

FAST_RETRY = RetryPolicy(max_retries=3, base_delay_ms=1, max_delay_ms=5)


def scripted(*steps: Any) -> ScriptedModel:
    return ScriptedModel.from_script({"steps": list(steps)})


async def test_tool_results_are_fed_back_to_the_model() -> None:
    seen: list[Any] = []

    def model(request: ScriptedRequest) -> Any:
        if request.round == 0:
            return {"toolCalls": [{"name": "shout", "args": {"text": "hi"}, "id": "c1"}]}
        seen.extend(request.messages)
        return "done"

    @tool
    def shout(text: str) -> str:
        """Upper-case some text."""
        return text.upper()

    agent = create_agent(model=ScriptedModel.from_callable(model), tools=[shout])
    events = await drain(agent.invoke("s", "shout hi"))
    assert [e.type for e in events] == ["tool_started", "tool_ended", "text", "completed"]
    started, ended = events[0], events[1]
    assert isinstance(started, ToolStarted) and started.args == {"text": "hi"} and started.id == "c1"
    assert isinstance(ended, ToolEnded) and ended.content == [{"type": "text", "text": "HI"}]
    result = seen[-1]
    assert result["role"] == "toolResult" and result["toolCallId"] == "c1"
    assert result["content"] == [{"type": "text", "text": "HI"}]


async def _max_concurrency(sequential: bool) -> int:
    running = 0
    peak = 0

    async def body() -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)
        running -= 1
        return "ok"

    @tool(sequential=sequential)
    async def first() -> str:
        """First."""
        return await body()

    @tool
    async def second() -> str:
        """Second."""
        return await body()

    model = scripted({"toolCalls": [{"name": "first"}, {"name": "second"}, {"name": "second"}]}, "done")
    agent = create_agent(model=model, tools=[first, second])
    await collect(agent.invoke("s", "go"))
    return peak


async def test_tools_run_concurrently_unless_one_is_sequential() -> None:
    assert await _max_concurrency(False) == 3
    assert await _max_concurrency(True) == 1


async def test_a_raising_tool_is_an_error_result_and_the_turn_goes_on() -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    seen: list[Any] = []

    def model(request: ScriptedRequest) -> Any:
        if request.round == 0:
            return {"toolCalls": [{"name": "explode"}, {"name": "missing_tool"}]}
        seen.extend(m for m in request.messages if m["role"] == "toolResult")
        return "recovered"

    agent = create_agent(model=ScriptedModel.from_callable(model), tools=[explode])
    events = await drain(agent.invoke("s", "go"))
    ended = [e for e in events if isinstance(e, ToolEnded)]
    assert all(e.is_error for e in ended)
    assert isinstance(events[-1], Completed)
    texts = [r["content"][0]["text"] for r in seen]
    assert "disk on fire" in texts
    assert "Tool missing_tool not found" in texts


async def test_invalid_arguments_go_back_as_a_result() -> None:
    @tool
    def square(n: int) -> int:
        """Square a number."""
        return n * n

    model = scripted({"toolCalls": [{"name": "square", "args": {"n": "many"}}]}, "ok")
    agent = create_agent(model=model, tools=[square])
    events = await drain(agent.invoke("s", "go"))
    ended = next(e for e in events if isinstance(e, ToolEnded))
    assert ended.is_error
    assert ended.content[0]["text"].startswith("Invalid arguments: n: ")


async def test_tool_budget_withdraws_tools_and_notes_it() -> None:
    requests: list[ScriptedRequest] = []

    def model(request: ScriptedRequest) -> Any:
        requests.append(request)
        if request.tools:
            return {"toolCalls": [{"name": "noop"}]}
        return "answering with what I have"

    @tool
    def noop() -> str:
        """Do nothing."""
        return "nothing"

    agent = create_agent(model=ScriptedModel.from_callable(model), tools=[noop], max_tool_rounds=2)
    result = await collect(agent.invoke("s", "loop"))
    assert result.text == "answering with what I have"
    assert len(requests) == 3
    assert list(requests[2].tools) == []
    last = requests[2].messages[-1]
    assert last["role"] == "user" and last["content"][0]["text"] == TOOL_BUDGET_NOTE


async def test_a_tool_call_after_the_budget_fails_the_turn() -> None:
    @tool
    def noop() -> str:
        """Do nothing."""
        return "nothing"

    model = ScriptedModel.from_callable(lambda r: {"toolCalls": [{"name": "noop"}]})
    agent = create_agent(model=model, tools=[noop], max_tool_rounds=1)
    events = await drain(agent.invoke("s", "loop"))
    assert isinstance(events[-1], Failed)
    assert "tool budget (1 rounds) was exhausted" in events[-1].details


async def test_transient_errors_are_retried_with_retrying_events() -> None:
    model = scripted(
        {"error": {"status": 429, "message": "slow down", "retryAfter": 0}},
        {"error": {"status": 500, "message": "oops"}},
        "finally",
    )
    agent = create_agent(model=model, retry=FAST_RETRY)
    events = await drain(agent.invoke("s", "hi"))
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [(r.attempt, r.max_attempts) for r in retries] == [(1, 3), (2, 3)]
    assert "429" in retries[0].reason and retries[0].delay_ms == 0
    assert isinstance(events[-1], Completed)
    assert "".join(e.delta for e in events if isinstance(e, Text)) == "finally"


async def test_non_retryable_errors_fail_at_once() -> None:
    model = scripted({"error": {"status": 401, "message": "invalid x-api-key"}})
    agent = create_agent(model=model, retry=FAST_RETRY)
    events = await drain(agent.invoke("s", "hi"))
    assert [e.type for e in events] == ["failed"]
    assert events[0] == Failed("scripted: 401 invalid x-api-key", False, "model_error")


async def test_retries_are_bounded() -> None:
    model = scripted({"error": {"status": 503, "message": "overloaded", "times": 99}})
    agent = create_agent(model=model, retry=FAST_RETRY)
    events = await drain(agent.invoke("s", "hi"))
    assert [e.type for e in events] == ["retrying"] * 3 + ["failed"]
    assert isinstance(events[-1], Failed) and events[-1].retryable


class CutAfterText:
    """Streams answer text, then fails with a retryable error: must not be retried."""

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: Any) -> Any:
        from fastagent_cli.errors import ProviderError
        from fastagent_cli.models.types import StreamDelta

        self.calls += 1
        yield StreamDelta("text", "Half an ans")
        raise ProviderError("stream interrupted: connection reset", retryable=True)

    async def aclose(self) -> None:
        return None


async def test_no_retry_once_answer_text_streamed() -> None:
    model = CutAfterText()
    agent = create_agent(model=model, retry=FAST_RETRY)
    events = await drain(agent.invoke("s", "hi"))
    assert model.calls == 1
    assert [e.type for e in events] == ["text", "failed"]
    assert isinstance(events[-1], Failed) and events[-1].retryable


async def test_same_session_collision_is_one_busy_failure() -> None:
    gate = asyncio.Event()

    @tool
    async def block() -> str:
        """Block until released."""
        await gate.wait()
        return "released"

    model = scripted({"toolCalls": [{"name": "block"}]}, "done")
    agent = create_agent(model=model, tools=[block], sessions=MemorySessionStore())
    first = agent.invoke("room", "one")
    assert isinstance(await first.__anext__(), ToolStarted)
    second = await drain(agent.invoke("room", "two"))
    assert second == [
        Failed("session busy: a turn is already in flight for this session", True, "session_busy")
    ]
    other = agent.config.sessions.try_lease("another-room")
    assert other is not None, "a lease is per session"
    other()
    gate.set()
    rest = [e async for e in first]
    assert isinstance(rest[-1], Completed)


async def test_the_lease_is_free_when_the_terminal_arrives() -> None:
    """A consumer that stops reading at the terminal (without closing) must not hold the session."""
    agent = create_agent(model="scripted/echo")
    events = agent.invoke("s", "a")
    while not isinstance(await events.__anext__(), Completed):
        pass
    lease = agent.config.sessions.try_lease("s")
    assert lease is not None
    lease()
    await events.aclose()
