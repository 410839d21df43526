"""The engine, on the scripted model, through the conformance suite; and the file-store pair."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import AgentEvent, Prompt, Scope, Text
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
from fastagent_cli.models.types import AssistantMessage, ModelRequest, StreamDelta
from fastagent_cli.sessions.store import FileSessionStore, MemorySessionStore, SessionStore
from fastagent_cli.tools.define import tool
from tests.conformance import suite
from tests.conftest import record_files


class HangingModel:
    """Streams one text delta, then waits until cancelled."""

    def __init__(self, on_cleanup: Callable[[str], None]) -> None:
        self.on_cleanup = on_cleanup

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta | AssistantMessage]:
        yield StreamDelta("text", "thinking about it")
        try:
            await asyncio.Event().wait()
        finally:
            self.on_cleanup("model")

    async def aclose(self) -> None:
        return None


def _tool_then_answer(request: ScriptedRequest) -> dict[str, Any]:
    if request.round == 0:
        return {"toolCalls": [{"name": "wait_forever", "args": {}}]}
    return {"text": "unreachable"}


class EngineSubject:
    def __init__(self, store_factory: Callable[[], SessionStore], hang_in: str) -> None:
        self.store_factory = store_factory
        self.hang_in = hang_in

    def _scope(self) -> Scope:
        return Scope(f"conf-{uuid.uuid4()}")

    async def completing(self) -> suite.Case:
        model = ScriptedModel.from_script(
            {"steps": [{"toolCalls": [{"name": "add", "args": {"a": 2, "b": 3}}]}, {"text": "2 + 3 = 5"}]}
        )

        @tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        agent = create_agent(model=model, tools=[add], sessions=self.store_factory())
        return suite.Case(agent, self._scope(), Prompt("add 2 and 3"))

    async def failing(self) -> suite.Case:
        model = ScriptedModel.from_script({"steps": [{"error": {"status": 401, "message": "bad key"}}]})
        agent = create_agent(model=model, sessions=self.store_factory())
        return suite.Case(agent, self._scope(), Prompt("hi"))

    async def hanging(self, on_cleanup: Callable[[str], None]) -> suite.Case:
        if self.hang_in == "model":
            agent = create_agent(model=HangingModel(on_cleanup), sessions=self.store_factory())
            return suite.Case(agent, self._scope(), Prompt("hang"))

        @tool
        async def wait_forever() -> str:
            """Wait until cancelled."""
            try:
                await asyncio.Event().wait()
            finally:
                on_cleanup("tool")
            return "never"

        model = ScriptedModel.from_callable(_tool_then_answer)
        agent = create_agent(model=model, tools=[wait_forever], sessions=self.store_factory())
        return suite.Case(agent, self._scope(), Prompt("hang in a tool"))

    async def pair(self) -> suite.Pair | None:
        return None


@pytest.fixture(params=["memory", "file"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], SessionStore]:
    if request.param == "memory":
        return lambda: MemorySessionStore(tmp_path)
    return lambda: FileSessionStore(tmp_path / "sessions", tmp_path)


async def test_must1_exactly_one_terminal_last(store_factory: Callable[[], SessionStore]) -> None:
    events = await suite.must1_success(EngineSubject(store_factory, "model"))
    types = [e.type for e in events]
    assert types[0] == "tool_started" and "tool_ended" in types
    assert "".join(e.delta for e in events if isinstance(e, Text)) == "2 + 3 = 5"


async def test_must2_failure_is_an_event(store_factory: Callable[[], SessionStore]) -> None:
    failed = await suite.must2_failure(EngineSubject(store_factory, "model"))
    assert failed.retryable is False
    assert "401" in failed.details and "bad key" in failed.details


@pytest.mark.parametrize("form", ["break", "aclose", "cancel"])
@pytest.mark.parametrize("hang_in", ["model", "tool"])
async def test_must3_cancel_aborts_in_flight_work(
    store_factory: Callable[[], SessionStore], form: str, hang_in: str
) -> None:
    subject = EngineSubject(store_factory, hang_in)
    kinds = await suite.must3(subject, form)
    assert kinds == [hang_in]


@pytest.mark.parametrize("form", ["break", "aclose", "cancel"])
async def test_must3_releases_the_session(tmp_path: Path, form: str) -> None:
    """After a cancel the lease is free: the next turn on the same session runs."""
    store = FileSessionStore(tmp_path / "sessions", tmp_path)
    cleaned: list[str] = []
    agent = create_agent(model=HangingModel(cleaned.append), sessions=store)
    scope = Scope("same")
    events = agent.invoke(scope, "hang")
    await asyncio.wait_for(events.__anext__(), 5)
    if form == "cancel":
        task = asyncio.create_task(events.__anext__())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    await events.aclose()
    assert cleaned == ["model"]
    lease = store.try_lease("same")
    assert lease is not None
    lease()


class PairSubject(EngineSubject):
    def __init__(self, directory: Path) -> None:
        super().__init__(lambda: FileSessionStore(directory, directory.parent), "model")
        self.directory = directory

    async def pair(self) -> suite.Pair:
        def answer(request: ScriptedRequest) -> str:
            users = [m for m in request.messages if m["role"] == "user"]
            return f"I have seen {len(users)} user messages"

        def make() -> EngineAgent:
            return create_agent(
                model=ScriptedModel.from_callable(answer),
                sessions=FileSessionStore(self.directory, self.directory.parent),
            )

        def saw_history(events: list[AgentEvent]) -> bool:
            text = "".join(e.delta for e in events if isinstance(e, Text))
            return text == "I have seen 2 user messages"

        return suite.Pair(
            make(), make(), saw_history, Prompt("remember the number 42"), Prompt("what number?")
        )


async def test_must6_two_instances_share_only_the_session_directory(tmp_path: Path) -> None:
    subject = PairSubject(tmp_path / "shared-sessions")
    await suite.must6_portable(subject)
    files = record_files(tmp_path / "shared-sessions")
    assert len(files) == 1 and files[0].name.endswith("Z_s-1001234567890.jsonl")


async def test_whole_suite_runs_as_one(tmp_path: Path) -> None:
    report = await suite.run_all(PairSubject(tmp_path / "all"))
    assert report["must3_break"] == ["model"]
