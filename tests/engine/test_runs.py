"""Runs: steering between the tool batch and the next model call, FIFO follow-ups in one invoke
stream, abort (during a tool, during a manual compaction), the race-window codes, the event hub."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.assembly.control import session_control
from fastagent_cli.contract import ABORTED_CODE, Completed, Failed, Prompt, Text, ToolEnded, ToolStarted
from fastagent_cli.control import (
    NO_ACTIVE_RUN,
    RUN_COMMAND_FAILED,
    SessionEvent,
    SessionEventsClosed,
)
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.compaction import CompactionSettings
from fastagent_cli.engine.hub import EventHub
from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.tools.coding.bash import create_bash_tool
from fastagent_cli.tools.define import tool
from tests.conformance.suite import drain


class Gate:
    """A tool that blocks until opened, recording that it ran and whether it was cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()

    def build(self) -> Any:
        gate = self

        @tool
        async def wait_here() -> str:
            """Wait for the gate."""
            gate.started.set()
            try:
                await gate.release.wait()
            except asyncio.CancelledError:
                gate.cancelled.set()
                raise
            return "gate opened"

        return wait_here


def conversation(request: ScriptedRequest) -> list[tuple[str, str]]:
    out = []
    for message in request.messages:
        content = message["content"]
        if isinstance(content, str):
            out.append((message["role"], content))
            continue
        kinds = [b.get("text") or b.get("name") or b["type"] for b in content]  # type: ignore[union-attr]
        out.append((message["role"], "|".join(str(k) for k in kinds)))
    return out


def agent_with(
    respond: Callable[[ScriptedRequest], Any], tmp_path: Path, tools: list[Any] = ()
) -> EngineAgent:  # type: ignore[assignment]
    return create_agent(
        model=ScriptedModel.from_callable(respond),
        tools=tools,
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        cwd=tmp_path,
    )


async def collect_events(agent: EngineAgent, session: str, until: str = "run_settled") -> list[SessionEvent]:
    seen: list[SessionEvent] = []
    async with agent.hub.subscribe(session) as events:
        async for event in events:
            seen.append(event)
            if event.type == until:
                break
    return seen


async def test_a_steer_is_delivered_after_the_tool_batch_before_the_next_model_call(tmp_path: Path) -> None:
    gate = Gate()
    requests: list[list[tuple[str, str]]] = []

    def respond(request: ScriptedRequest) -> Any:
        requests.append(conversation(request))
        if request.last_user_text == "go":
            return {
                "toolCalls": [
                    {"name": "wait_here", "args": {}, "id": "t1"},
                    {"name": "wait_here", "id": "t2"},
                ]
            }
        return f"answer to {request.last_user_text}"

    agent = agent_with(respond, tmp_path, [gate.build()])
    hub = session_control(agent)
    watching = asyncio.create_task(collect_events(agent, "s"))
    running = asyncio.create_task(drain(agent.invoke("s", "go")))
    await asyncio.wait_for(gate.started.wait(), 10)
    steered = await hub.sessions.get("s").steer(Prompt("use uv, not pip"))
    assert steered.ok and steered.run_id == agent.runs.active("s").run_id  # type: ignore[union-attr]
    state = await hub.sessions.get("s").state()
    assert state.status == "running" and state.pending.steering == ("use uv, not pip",)
    gate.release.set()
    events = await running
    assert [type(e).__name__ for e in events[:4]] == ["ToolStarted", "ToolStarted", "ToolEnded", "ToolEnded"]
    assert "".join(e.delta for e in events if isinstance(e, Text)) == "answer to use uv, not pip"
    assert isinstance(events[-1], Completed) and len([e for e in events if isinstance(e, Completed)]) == 1
    # both calls of the batch ran to the end; the steer came after both results, before the model
    assert requests[1] == [
        ("user", "go"),
        ("assistant", "wait_here|wait_here"),
        ("toolResult", "gate opened"),
        ("toolResult", "gate opened"),
        ("user", "use uv, not pip"),
    ]
    seen = [e.type for e in await watching]
    assert seen[0] == "run_started" and seen[-1] == "run_settled"
    assert seen.index("queue_changed") < seen.index("tool_finished")
    assert seen.count("user_message") == 2
    assert (await hub.sessions.get("s").state()).status == "idle"


async def test_follow_ups_are_fifo_and_one_invoke_stream_lasts_to_the_settle(tmp_path: Path) -> None:
    gate = Gate()

    def respond(request: ScriptedRequest) -> Any:
        if request.last_user_text == "first" and request.round == 0:
            return {"toolCalls": [{"name": "wait_here", "args": {}}]}
        return {"text": f"[{request.last_user_text}]"}

    agent = agent_with(respond, tmp_path, [gate.build()])
    s = session_control(agent).sessions.get("f")
    running = asyncio.create_task(drain(agent.invoke("f", "first")))
    await asyncio.wait_for(gate.started.wait(), 10)
    assert (await s.follow_up(Prompt("second"))).ok
    assert (await s.follow_up(Prompt("third"))).ok
    assert (await s.state()).pending.follow_up == ("second", "third")
    gate.release.set()
    events = await running
    text = "".join(e.delta for e in events if isinstance(e, Text))
    assert text == "[first][second][third]"  # FIFO, each after the answer before it
    terminals = [e for e in events if isinstance(e, Completed | Failed)]
    assert len(terminals) == 1 and events[-1] is terminals[0]
    users = [e for e in (await s.entries()).entries if e.kind == "user"]
    assert [u.data["text"] for u in users] == ["first", "second", "third"]


async def test_a_caller_that_never_acts_sees_exactly_one_turn(tmp_path: Path) -> None:
    agent = agent_with(lambda r: {"text": "plain answer"}, tmp_path)
    events = await drain(agent.invoke("p", "hi"))
    assert [type(e).__name__ for e in events] == ["Text", "Text", "Completed"]
    assert events[-1].data["stopReason"] == "stop"  # type: ignore[union-attr]


async def test_abort_during_a_tool_fails_the_invoke_aborted_and_kills_bash(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def respond(request: ScriptedRequest) -> Any:
        if request.last_user_text == "run it" and request.round == 0:
            command = f"echo $$ > {pid_file}; sleep 60"
            return {"toolCalls": [{"name": "bash", "args": {"command": command}}]}
        return "fine"

    agent = agent_with(respond, tmp_path, [create_bash_tool(str(tmp_path))])
    s = session_control(agent).sessions.get("a")
    watching = asyncio.create_task(collect_events(agent, "a"))
    running = asyncio.create_task(drain(agent.invoke("a", "run it")))
    for _ in range(500):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.02)
    pid = int(pid_file.read_text())
    result = await s.abort()
    assert result.ok and result.run_id is not None
    events = await asyncio.wait_for(running, 10)
    assert isinstance(events[-1], Failed)
    assert (events[-1].code, events[-1].retryable) == (ABORTED_CODE, False)
    ended = [e for e in events if isinstance(e, ToolEnded)]
    assert len(ended) == 1 and ended[0].is_error and ended[0].content[0]["text"] == "Operation aborted"
    assert any(isinstance(e, ToolStarted) for e in events)
    with pytest.raises(ProcessLookupError):  # the shell's process group is gone
        for _ in range(100):
            os.kill(pid, 0)
            await asyncio.sleep(0.05)
    settled = (await watching)[-1]
    assert settled.type == "run_settled" and settled.data["status"] == "aborted"
    assert settled.data["error"]["code"] == ABORTED_CODE
    assert (await s.state()).status == "idle"
    again = await drain(agent.invoke("a", "again"))  # the session is free and its record valid
    assert isinstance(again[-1], Completed)


async def test_abort_during_a_manual_compaction(tmp_path: Path) -> None:
    summary_started = asyncio.Event()
    summary_cancelled = asyncio.Event()

    async def respond(request: ScriptedRequest) -> Any:
        if request.system.startswith("You are a context summarization assistant"):
            summary_started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                summary_cancelled.set()
                raise
        return "x" * 200

    agent = create_agent(
        model=ScriptedModel.from_callable(respond),
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        cwd=tmp_path,
    )
    agent.config.compaction = CompactionSettings(keep_recent_tokens=10)
    s = session_control(agent).sessions.get("c")
    for text in ("one", "two", "three"):
        await drain(agent.invoke("c", text))
    watching = asyncio.create_task(collect_events(agent, "c", until="compaction_finished"))
    await asyncio.sleep(0)
    assert (await s.compact()).ok
    await asyncio.wait_for(summary_started.wait(), 10)
    assert (await s.state()).status == "compacting"
    busy = await drain(agent.invoke("c", "meanwhile"))
    assert isinstance(busy[-1], Failed) and busy[-1].code == "session_busy"  # the compaction holds the lease
    result = await s.abort()
    assert result.ok and result.run_id is None
    seen = await asyncio.wait_for(watching, 10)
    assert [e.type for e in seen] == ["compaction_started", "compaction_finished"]
    assert seen[-1].data == {"aborted": True}
    assert summary_cancelled.is_set()
    assert (await s.state()).status == "idle"
    assert not [e for e in (await s.entries()).entries if e.kind == "compaction"]  # nothing written


async def test_the_race_window_codes(tmp_path: Path) -> None:
    agent = agent_with(lambda r: {"text": "done"}, tmp_path)
    s = session_control(agent).sessions.get("r")
    for action in (s.steer(Prompt("x")), s.follow_up(Prompt("x")), s.abort()):
        idle = await action
        assert not idle.ok and idle.error is not None
        assert (idle.error.code, idle.error.retryable) == (NO_ACTIVE_RUN, False)

    late: list[Any] = []

    async def act_when_the_answer_is_recorded() -> None:
        async with agent.hub.subscribe("r") as events:
            async for event in events:
                if event.type == "message_finished":
                    # the run took its last look at the queues; it has not settled yet
                    late.extend([await s.steer(Prompt("too late")), await s.abort()])
                    return

    watcher = asyncio.create_task(act_when_the_answer_is_recorded())
    await asyncio.sleep(0)
    events = await drain(agent.invoke("r", "go"))
    await watcher
    assert isinstance(events[-1], Completed)
    assert [(r.ok, r.code, r.error.retryable) for r in late] == [  # type: ignore[union-attr]
        (False, RUN_COMMAND_FAILED, False),
        (False, RUN_COMMAND_FAILED, False),
    ]
    users = [e.data["text"] for e in (await s.entries()).entries if e.kind == "user"]
    assert users == ["go"]  # the refused steer never entered the conversation


async def test_a_watcher_far_behind_is_closed_after_draining() -> None:
    hub = EventHub(cap=3)
    slow = hub.subscribe("s")
    fast = hub.subscribe("s")
    for i in range(4):
        hub.publish("s", SessionEvent("message_delta", {"channel": "text", "delta": str(i)}))
        if i < 3:
            assert (await fast.__anext__()).data["delta"] == str(i)
    assert (await fast.__anext__()).data["delta"] == "3"
    got = [(await slow.__anext__()).data["delta"] for _ in range(3)]
    assert got == ["0", "1", "2"]
    with pytest.raises(SessionEventsClosed) as closed:
        await slow.__anext__()
    assert closed.value.reason == "overflow"
    assert hub.watching("s") == 1
    hub.end_session("s")
    with pytest.raises(SessionEventsClosed):
        await fast.__anext__()
    await fast.aclose()
    assert hub.watching("s") == 0


async def test_a_caller_that_leaves_stops_the_run_and_frees_the_session(tmp_path: Path) -> None:
    gate = Gate()
    agent = agent_with(
        lambda r: {"toolCalls": [{"name": "wait_here"}]} if r.round == 0 else "x", tmp_path, [gate.build()]
    )
    watching = asyncio.create_task(collect_events(agent, "l"))
    stream = agent.invoke("l", "go")
    async for event in stream:
        if isinstance(event, ToolStarted):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert gate.cancelled.is_set()
    settled = (await watching)[-1]
    assert settled.data["status"] == "aborted"
    assert agent.runs.active("l") is None
    release = agent.config.sessions.try_lease("l")
    assert release is not None
    release()


async def test_abort_during_an_automatic_compaction_inside_a_run(tmp_path: Path) -> None:
    summarising = asyncio.Event()

    async def respond(request: ScriptedRequest) -> Any:
        if request.system.startswith("You are a context summarization assistant"):
            summarising.set()
            await asyncio.sleep(60)
        big = request.last_user_text.startswith("big")
        return {"text": "ok", "usage": {"input": 120_000 if big else 10}}

    agent = agent_with(respond, tmp_path)
    agent.config.compaction = CompactionSettings(keep_recent_tokens=10)
    for text in ("one " + "." * 100, "two " + "." * 100):
        await drain(agent.invoke("ac", text))
    subscription = agent.hub.subscribe("ac")
    running = asyncio.create_task(drain(agent.invoke("ac", "big " + "." * 100)))
    await asyncio.wait_for(summarising.wait(), 10)
    state = await session_control(agent).sessions.get("ac").state()
    assert state.status == "running"  # an automatic compaction belongs to the run
    assert (await session_control(agent).sessions.get("ac").abort()).ok
    events = await asyncio.wait_for(running, 10)
    assert isinstance(events[-1], Failed) and events[-1].code == ABORTED_CODE
    seen = [await subscription.__anext__() for _ in range(subscription.pending)]
    types = [e.type for e in seen]
    assert types[-3:] == ["compaction_started", "compaction_finished", "run_settled"]
    assert seen[-2].data == {"aborted": True} and seen[-1].data["status"] == "aborted"


class _Escape(BaseException):
    """Not an Exception: nothing in the run catches it."""


async def test_a_run_that_crashes_outside_its_outcome_reports_a_serving_error(tmp_path: Path) -> None:
    @tool
    async def escape() -> str:
        """Escape every handler."""
        raise _Escape("boom")

    agent = agent_with(
        lambda r: {"toolCalls": [{"name": "escape"}]} if r.round == 0 else "x", tmp_path, [escape]
    )
    subscription = agent.hub.subscribe("x")
    events = await drain(agent.invoke("x", "go"))
    assert isinstance(events[-1], Failed) and (events[-1].code, events[-1].details) == (
        "internal_error",
        "internal error",
    )
    seen = [await subscription.__anext__() for _ in range(subscription.pending)]
    assert [e.type for e in seen][-2:] == ["serving_error", "run_settled"]
    assert seen[-1].data["status"] == "failed"
    assert agent.runs.active("x") is None


async def test_tool_finished_carries_the_result_as_the_original_does(tmp_path: Path) -> None:
    @tool
    async def measure() -> dict[str, int]:
        """Measure."""
        return {"width": 3}

    def respond(request: ScriptedRequest) -> Any:
        if request.messages[-1]["role"] == "user":
            return {"toolCalls": [{"name": "measure", "args": {}, "id": "m1"}]}
        return "measured"

    agent = agent_with(respond, tmp_path, [measure])
    watching = asyncio.create_task(collect_events(agent, "s"))
    await asyncio.sleep(0)
    events = await drain(agent.invoke("s", "go"))
    finished = next(e for e in await watching if e.type == "tool_finished")
    # {content: [blocks], details?}: what the original's tool_finished carries
    assert finished.data["content"]["details"] == {"width": 3}
    blocks = finished.data["content"]["content"]
    assert blocks[0]["type"] == "text" and '"width"' in blocks[0]["text"]
    ended = next(e for e in events if isinstance(e, ToolEnded))
    assert ended.content == blocks  # the invoke stream's tool_ended keeps the blocks
