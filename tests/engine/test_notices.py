"""Notices and the inbox: asyncai's coalescing rule on the engine's follow-up queue.

An idle session starts a run at once; N notices arriving during a run cause exactly one follow-up
turn with the full history, the run's answer placed before them; notices are recorded as
``custom_message`` entries (never user messages); a late input opens the next run."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastagent_cli.contract import AgentEvent, Completed, Prompt, Text
from fastagent_cli.control import NOTICE_TYPE, Notice
from fastagent_cli.engine.inbox import EngineInbox
from fastagent_cli.models.scripted import ScriptedRequest
from tests.conformance.suite import drain
from tests.engine.test_runs import Gate, agent_with, conversation


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, AgentEvent]] = []
        self.inputs: list[tuple[str, str, dict[str, Any]]] = []
        self.replies: list[tuple[str, str]] = []

    def on_input(self, session: str, kind: str, data: Mapping[str, Any]) -> None:
        self.inputs.append((session, kind, dict(data)))

    def on_event(self, session: str, event: AgentEvent) -> None:
        self.events.append((session, event))

    def on_reply(self, session: str, text: str) -> None:
        self.replies.append((session, text))

    def terminals(self) -> list[AgentEvent]:
        return [e for _, e in self.events if isinstance(e, Completed) or e.type == "failed"]


async def entries(agent: Any, session: str) -> list[dict[str, Any]]:
    record = await agent.store.read(session)
    assert record is not None
    return list(record.entries)


async def test_three_notices_during_a_run_cause_exactly_one_follow_up_turn(tmp_path: Path) -> None:
    gate = Gate()
    requests: list[list[tuple[str, str]]] = []

    def respond(request: ScriptedRequest) -> Any:
        requests.append(conversation(request))
        if len(requests) == 1:
            return {"toolCalls": [{"name": "wait_here", "args": {}}]}
        return {"text": f"answer {len(requests)}"}

    agent = agent_with(respond, tmp_path, tools=[gate.build()])
    sink = Sink()
    inbox = EngineInbox(agent, sink)
    inbox.post("n", Prompt("start working"))
    await asyncio.wait_for(gate.started.wait(), 10)
    for i in (1, 2, 3):  # all three arrive while the run is inside its tool call
        inbox.post("n", Notice("test", f"notice {i}"))
    gate.release.set()
    await asyncio.wait_for(inbox.drain(), 10)

    # one run (one terminal), three model requests: tool call, answer, one follow-up answer
    assert [type(t).__name__ for t in sink.terminals()] == ["Completed"]
    assert len(requests) == 3
    last = requests[-1]
    # the full history, the answer before the notices that arrived during the run, in order
    assert [role for role, _ in last] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "user",
        "user",
        "user",
    ]
    assert last[3] == ("assistant", "answer 2")
    assert [text.splitlines()[1] for _, text in last[4:]] == ["notice 1", "notice 2", "notice 3"]
    assert sink.replies == [("n", "answer 2"), ("n", "answer 3")]
    assert [kind for _, kind, _ in sink.inputs] == ["user_message", "notice", "notice", "notice"]

    # recorded as notices (custom_message entries), never as user messages
    recorded = await entries(agent, "n")
    users = [e for e in recorded if e["type"] == "message" and e["message"]["role"] == "user"]
    assert [u["message"]["content"][0]["text"] for u in users] == ["start working"]
    notices = [e for e in recorded if e["type"] == "custom_message"]
    assert [n["customType"] for n in notices] == [NOTICE_TYPE] * 3
    assert [n["details"] for n in notices] == [{"source": "test", "text": f"notice {i}"} for i in (1, 2, 3)]
    order = [e["type"] if e["type"] != "message" else e["message"]["role"] for e in recorded]
    assert order[-5:] == ["assistant", "custom_message", "custom_message", "custom_message", "assistant"]


async def test_a_notice_on_an_idle_session_starts_a_run_at_once(tmp_path: Path) -> None:
    seen: list[list[tuple[str, str]]] = []

    def respond(request: ScriptedRequest) -> Any:
        seen.append(conversation(request))
        return {"text": "noted"}

    agent = agent_with(respond, tmp_path)
    sink = Sink()
    inbox = EngineInbox(agent, sink)
    inbox.post("idle", Notice("mcp:files", "file:///a changed"))
    assert inbox.busy()
    await asyncio.wait_for(inbox.drain(), 10)
    assert len(seen) == 1 and seen[0][0][0] == "user"
    assert 'source="mcp:files"' in seen[0][0][1] and "file:///a changed" in seen[0][0][1]
    assert sink.replies == [("idle", "noted")]
    assert "".join(e.delta for _, e in sink.events if isinstance(e, Text)) == "noted"


async def test_several_items_of_one_post_open_one_run_together(tmp_path: Path) -> None:
    seen: list[list[tuple[str, str]]] = []

    def respond(request: ScriptedRequest) -> Any:
        seen.append(conversation(request))
        return {"text": "NO_REPLY"}

    agent = agent_with(respond, tmp_path)
    sink = Sink()
    inbox = EngineInbox(agent, sink)
    inbox.post_many("s", [Notice("prompt:on-start", "say hello"), Notice("mcp:x", "changed")])
    await asyncio.wait_for(inbox.drain(), 10)
    assert len(seen) == 1 and len(seen[0]) == 2
    assert sink.replies == [("s", "NO_REPLY")]  # the sink decides what NO_REPLY means


async def test_input_arriving_while_the_run_settles_opens_exactly_one_next_run(tmp_path: Path) -> None:
    """Once the run has taken its last look at the queues, later input cannot join it: it waits,
    and everything that waited opens one run."""
    requests: list[list[tuple[str, str]]] = []
    agent = agent_with(lambda r: requests.append(conversation(r)) or {"text": f"a{len(requests)}"}, tmp_path)
    sink = Sink()
    inbox = EngineInbox(agent, sink)
    posted = asyncio.Event()

    async def post_after_the_answer() -> None:
        async with agent.hub.subscribe("w") as events:
            async for event in events:
                if event.type == "message_finished":
                    await asyncio.sleep(0)  # the run stops accepting before it settles
                    for i in (1, 2):
                        inbox.post("w", Notice("late", f"late {i}"))
                    posted.set()
                    return

    watcher = asyncio.create_task(post_after_the_answer())
    await asyncio.sleep(0)
    inbox.post("w", Prompt("first"))
    await asyncio.wait_for(posted.wait(), 10)
    await asyncio.wait_for(inbox.drain(), 10)
    await watcher
    terminals = sink.terminals()
    assert 1 <= len(terminals) <= 2 and all(isinstance(t, Completed) for t in terminals)
    assert len(requests) == 2  # one turn for "first", one for both late notices together
    assert [text.splitlines()[1] for role, text in requests[1][-2:]] == ["late 1", "late 2"]


async def test_a_plain_invoke_is_unchanged_and_a_run_started_elsewhere_takes_the_notices(
    tmp_path: Path,
) -> None:
    """A notice that reaches a session while someone else's invoke runs it joins that run (one
    follow-up turn in that invoke's stream); the inbox starts nothing of its own."""
    gate = Gate()
    count = 0

    def respond(request: ScriptedRequest) -> Any:
        nonlocal count
        count += 1
        return {"toolCalls": [{"name": "wait_here", "args": {}}]} if count == 1 else {"text": f"r{count}"}

    agent = agent_with(respond, tmp_path, tools=[gate.build()])
    sink = Sink()
    inbox = EngineInbox(agent, sink)
    running = asyncio.create_task(drain(agent.invoke("x", "go")))
    await asyncio.wait_for(gate.started.wait(), 10)
    inbox.post("x", Notice("n", "one"))
    inbox.post("x", Notice("n", "two"))
    assert not inbox.busy()  # joined the active run
    gate.release.set()
    events = await asyncio.wait_for(running, 10)
    assert isinstance(events[-1], Completed)
    assert "".join(e.delta for e in events if isinstance(e, Text)) == "r2r3"
    assert count == 3 and sink.events == []
