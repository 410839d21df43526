"""``attach``'s follower against the real plane (in process, over HTTP) while a run streams: it
attaches before the run or joins mid-answer, then its connection is cut mid-answer and comes back
on a restarted plane (a new port and token, as ``control.json`` would say) while the run goes on.
The transcript holds every entry once and the whole answer exactly once: a message joined
mid-answer is shown from the record, an answer streamed live and cut continues where it stopped."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.assembly.control import session_control
from fastagent_cli.chat.attach.follow import Follower
from fastagent_cli.chat.attach.link import Endpoint, Link
from fastagent_cli.chat.transcript import Transcript
from fastagent_cli.contract import collect
from fastagent_cli.control import SessionState
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.serving.control import create_control_plane
from fastagent_cli.serving.host import Server, serve
from fastagent_cli.serving.router import build_router
from fastagent_cli.sessions.store import MemorySessionStore
from tests.chat.test_attach_transcript import Screen

ANSWER = " ".join(f"word{i:03d}" for i in range(120)) + "."


class FakeTerminal:
    """The follower's Screen, recording instead of drawing."""

    def __init__(self, sink: Screen) -> None:
        self.sink = sink
        self.running = False
        self.settled = asyncio.Event()
        self.connection: list[str | None] = []

    @contextlib.asynccontextmanager
    async def printing(self) -> AsyncIterator[None]:
        yield

    async def enter_run(self) -> None:
        self.running = True

    async def leave_run(self) -> None:
        if self.running:
            self.settled.set()
        self.running = False

    def show_state(self, state: SessionState) -> None:
        pass

    def show_change(self, data: dict[str, object]) -> None:
        pass

    def show_pending(self, steering: tuple[str, ...], follow_up: tuple[str, ...]) -> None:
        pass

    def show_connection(self, problem: str | None) -> None:
        self.connection.append(problem)

    def note(self, text: str, style: str = "cyan") -> None:
        self.sink.note(text, style)


@pytest.mark.parametrize("joins", ["before the run", "mid-answer"])
async def test_a_connection_cut_mid_answer_shows_everything_once(tmp_path: Path, joins: str) -> None:
    script = {
        "rules": [
            {"match": "long", "steps": [{"text": ANSWER, "chunkSize": 8, "chunkDelayMs": 15}]},
            {"steps": ["short answer"]},
        ]
    }
    agent = create_agent(model=ScriptedModel.from_script(script), sessions=MemorySessionStore(tmp_path))
    control = session_control(agent)
    servers: list[Server] = []

    async def start(token: str) -> Endpoint:
        server = serve(build_router({}, {"/control": create_control_plane(control, token, agent)}), port=0)
        servers.append(server)
        return Endpoint(f"http://127.0.0.1:{await server.listening}", token)

    endpoint = await start("first-token")
    current = {"endpoint": endpoint}
    first = await collect(agent.invoke("s", "hello"))
    assert first.text == "short answer"
    sink = Screen()
    terminal = FakeTerminal(sink)
    link = Link(endpoint, lambda: current["endpoint"], "control.json")
    follower = Follower(link, "s", Transcript(sink, time.monotonic), terminal)
    if joins == "mid-answer":
        running = asyncio.create_task(collect(agent.invoke("s", "a long one")))
        await asyncio.sleep(0.4)
    await follower.connect()
    following = asyncio.create_task(follower.run())
    if joins == "before the run":
        await asyncio.sleep(0.3)
        running = asyncio.create_task(collect(agent.invoke("s", "a long one")))
    try:
        await asyncio.sleep(0.5)
        # cut the follower's connection mid-answer; the plane comes back elsewhere with a new token
        await servers[0].close()
        current["endpoint"] = await start("second-token")
        done = await asyncio.wait_for(running, 30)
        assert done.text == ANSWER
        await asyncio.wait_for(terminal.settled.wait(), 20)
        assert link.endpoint == current["endpoint"]
    finally:
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)
        await link.aclose()
        for server in servers:
            await server.close()
        await agent.aclose()
    answers = [line[3:] for line in sink.lines if line.startswith("A: ")]
    assert answers[0] == "short answer" and "".join(answers[1:]) == ANSWER, sink.lines
    if joins == "before the run":  # streamed live, cut, then continued from the record
        assert len(answers) == 3 and len(sink.streamed) > 5
    assert [line for line in sink.lines if line.startswith("> ")] == ["> hello", "> a long one"]
    assert "".join(sink.streamed).count("word000") == 1 and "".join(sink.streamed).count("word119") == 1
    assert any("reconnected" in line and "restarted" in line for line in sink.lines)
    assert None in terminal.connection and "reconnecting…" in terminal.connection
