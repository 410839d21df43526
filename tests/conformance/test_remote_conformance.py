"""``connect_agent`` through the conformance suite: the remote data plane (``POST /control/invoke``
on a real host, the engine behind it) is an Agent like any other. The in-flight work that MUST 3
cancels runs on the server, so the check is that closing the client's stream reaches it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import AgentEvent, Prompt, Scope, Text
from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
from fastagent_cli.remote import RemoteAgent, connect_agent
from fastagent_cli.sessions.store import FileSessionStore, MemorySessionStore
from fastagent_cli.tools.define import tool
from tests.conformance import suite
from tests.conformance.test_engine_conformance import HangingModel
from tests.remote.plane import TOKEN, Planes


def _tool_then_answer(request: ScriptedRequest) -> dict[str, Any]:
    if request.round == 0:
        return {"toolCalls": [{"name": "wait_forever", "args": {}}]}
    return {"text": "unreachable"}


class RemoteSubject:
    def __init__(self, planes: Planes, tmp_path: Path, hang_in: str = "model") -> None:
        self.planes = planes
        self.tmp_path = tmp_path
        self.hang_in = hang_in
        self.clients: list[RemoteAgent] = []

    async def _remote(self, agent: Any) -> RemoteAgent:
        served = await self.planes.start(agent)
        client = connect_agent(served.url, TOKEN)
        self.clients.append(client)
        return client

    def _scope(self) -> Scope:
        return Scope(f"remote-{uuid.uuid4()}")

    async def completing(self) -> suite.Case:
        model = ScriptedModel.from_script(
            {"steps": [{"toolCalls": [{"name": "add", "args": {"a": 2, "b": 3}}]}, {"text": "2 + 3 = 5"}]}
        )

        @tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        agent = create_agent(model=model, tools=[add], sessions=MemorySessionStore(self.tmp_path))
        return suite.Case(await self._remote(agent), self._scope(), Prompt("add 2 and 3"))

    async def failing(self) -> suite.Case:
        model = ScriptedModel.from_script({"steps": [{"error": {"status": 401, "message": "bad key"}}]})
        agent = create_agent(model=model, sessions=MemorySessionStore(self.tmp_path))
        return suite.Case(await self._remote(agent), self._scope(), Prompt("hi"))

    async def hanging(self, on_cleanup: Callable[[str], None]) -> suite.Case:
        if self.hang_in == "model":
            agent = create_agent(model=HangingModel(on_cleanup), sessions=MemorySessionStore(self.tmp_path))
            return suite.Case(await self._remote(agent), self._scope(), Prompt("hang"))

        @tool
        async def wait_forever() -> str:
            """Wait until cancelled."""
            try:
                await asyncio.Event().wait()
            finally:
                on_cleanup("tool")
            return "never"

        model = ScriptedModel.from_callable(_tool_then_answer)
        agent = create_agent(model=model, tools=[wait_forever], sessions=MemorySessionStore(self.tmp_path))
        return suite.Case(await self._remote(agent), self._scope(), Prompt("hang in a tool"))

    async def pair(self) -> suite.Pair:
        """Two serves sharing only a session directory, each driven through its own client."""
        directory = self.tmp_path / "shared-sessions"

        def answer(request: ScriptedRequest) -> str:
            users = [m for m in request.messages if m["role"] == "user"]
            return f"I have seen {len(users)} user messages"

        def make() -> Any:
            store = FileSessionStore(directory, directory.parent)
            return create_agent(model=ScriptedModel.from_callable(answer), sessions=store)

        def saw_history(events: list[AgentEvent]) -> bool:
            return "".join(e.delta for e in events if isinstance(e, Text)) == "I have seen 2 user messages"

        a, b = await self._remote(make()), await self._remote(make())
        return suite.Pair(a, b, saw_history, Prompt("remember the number 42"), Prompt("what number?"))

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


@pytest.fixture
async def subject(tmp_path: Path) -> AsyncIterator[RemoteSubject]:
    planes = Planes()
    made = RemoteSubject(planes, tmp_path)
    try:
        yield made
    finally:
        await made.aclose()
        await planes.close()


async def test_the_whole_suite_over_http(subject: RemoteSubject) -> None:
    report = await suite.run_all(subject)
    assert [e.type for e in report["must1"]][:2] == ["tool_started", "tool_ended"]
    assert "".join(e.delta for e in report["must1"] if isinstance(e, Text)) == "2 + 3 = 5"
    assert report["must2"].retryable is False and "bad key" in report["must2"].details
    assert report["must3_break"] == report["must3_aclose"] == report["must3_cancel"] == ["model"]


@pytest.mark.parametrize("form", ["break", "aclose", "cancel"])
async def test_closing_the_stream_stops_a_tool_on_the_server(subject: RemoteSubject, form: str) -> None:
    subject.hang_in = "tool"
    assert await suite.must3(subject, form) == ["tool"]
