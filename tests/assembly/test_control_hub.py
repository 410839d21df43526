"""The local session hub: reads, update (validated as a whole, one event, partial updates), fork
(idempotent), delete (ends live streams), the listing, and the write gate."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.assembly.control import LocalSessionControl, session_control
from fastagent_cli.contract import Prompt
from fastagent_cli.control import (
    INVALID_COMMAND,
    NO_SUCH_SESSION,
    PARTIAL_UPDATE,
    SESSION_BUSY,
    UNSUPPORTED_CAPABILITY,
    SessionEventsClosed,
    SessionUpdate,
)
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.errors import SessionError
from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
from fastagent_cli.sessions import file_store as store_module
from fastagent_cli.sessions.store import FileSessionStore
from tests.conformance.suite import drain
from tests.conftest import record_files


def build(
    tmp_path: Path, writes: bool = True
) -> tuple[EngineAgent, LocalSessionControl, list[ScriptedRequest]]:
    requests: list[ScriptedRequest] = []

    def respond(request: ScriptedRequest) -> Any:
        requests.append(request)
        return f"re: {request.last_user_text}"

    agent = create_agent(
        model=ScriptedModel.from_callable(respond),
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        cwd=tmp_path,
    )
    return agent, session_control(agent, writes=writes), requests


def lines(agent: EngineAgent, session: str) -> list[dict[str, Any]]:
    store = agent.config.sessions
    assert isinstance(store, FileSessionStore)
    path = store.location(session)
    assert path is not None
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_update_validates_as_a_whole_then_writes_and_reports_once(tmp_path: Path) -> None:
    agent, hub, _ = build(tmp_path)
    s = hub.sessions.get("u")
    assert (await s.update(SessionUpdate(name="x"))).code == NO_SUCH_SESSION
    await drain(agent.invoke("u", "hello"))
    before = lines(agent, "u")
    bad = await s.update(SessionUpdate(name="Deploy notes", model="nope/nothing"))
    assert bad.code == INVALID_COMMAND and bad.error is not None
    assert (
        bad.error.message
        == 'unknown model "nope/nothing" — capabilities().modelSelection lists the allowed specs'
    )
    bad = await s.update(
        SessionUpdate(name="Deploy notes", model="openai/gpt-4.1-mini", thinking_level="high")
    )
    assert (
        bad.code == INVALID_COMMAND
        and "not supported by openai/gpt-4.1-mini (allowed: off)" in bad.error.message
    )  # type: ignore[union-attr]
    assert (await s.update(SessionUpdate(thinking_level="extreme"))).code == INVALID_COMMAND
    assert (await s.update(SessionUpdate(name="  "))).code == INVALID_COMMAND
    huge = await s.update(SessionUpdate(name="n" * 100_000))  # 100 KB used to be accepted
    assert huge.code == INVALID_COMMAND and huge.error is not None
    assert huge.error.message == "name must be at most 200 characters (it has 100000)"
    assert (await s.update(SessionUpdate(name="n" * 201))).code == INVALID_COMMAND
    assert (await s.update(SessionUpdate(leaf_entry_id="feedbeef"))).code == INVALID_COMMAND
    assert lines(agent, "u") == before  # a rejected patch leaves nothing behind

    events = s.events()
    result = await s.update(SessionUpdate(name=" Deploy notes ", model="scripted/echo", thinking_level="low"))
    assert result.ok
    changed = await events.__anext__()
    assert changed.type == "state_changed"
    # the fields the patch changed; the leaf only for a navigation (the original's state_changed)
    assert changed.data == {"name": "Deploy notes", "model": "scripted/echo", "thinkingLevel": "low"}
    assert events.pending == 0  # one patch, one event
    written = [
        (e["type"], e.get("name") or e.get("modelId") or e.get("thinkingLevel"))
        for e in lines(agent, "u")[-3:]
    ]
    assert written == [
        ("session_info", "Deploy notes"),
        ("model_change", "echo"),
        ("thinking_level_change", "low"),
    ]
    state = await s.state()
    assert (state.name, state.model, state.thinking_level) == ("Deploy notes", "scripted/echo", "low")
    answer = await drain(agent.invoke("u", "next"))
    assert answer[-1].data["model"] == "scripted/echo"  # type: ignore[union-attr]
    await events.aclose()


async def test_moving_the_leaf_branches_the_next_turn_and_survives_a_reopen(tmp_path: Path) -> None:
    agent, hub, requests = build(tmp_path)
    s = hub.sessions.get("b")
    await drain(agent.invoke("b", "one"))
    await drain(agent.invoke("b", "two"))
    first_answer = [e for e in (await s.entries()).entries if e.kind == "assistant"][0]
    assert (await s.update(SessionUpdate(leaf_entry_id=first_answer.id))).ok
    assert (await s.state()).leaf_entry_id == first_answer.id
    count = len(lines(agent, "b"))
    assert (await s.update(SessionUpdate(leaf_entry_id=first_answer.id))).ok  # already there
    assert len(lines(agent, "b")) == count  # writes nothing

    reopened = FileSessionStore(tmp_path / "sessions", tmp_path)  # another process, same file
    record = await reopened.read("b")
    assert record is not None and record.leaf_id == first_answer.id
    await drain(agent.invoke("b", "three"))
    users = [m["content"][0]["text"] for m in requests[-1].messages if m["role"] == "user"]  # type: ignore[index]
    assert users == ["one", "three"]  # "two" is on the sibling branch now
    published = [e.kind for e in (await s.entries()).entries]
    assert "custom" not in published  # the leaf marker is not a position


async def test_a_failure_between_writes_is_a_partial_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, hub, _ = build(tmp_path)
    s = hub.sessions.get("p")
    await drain(agent.invoke("p", "hello"))
    real = store_module.append_jsonl
    calls = {"n": 0}

    def failing(path: Any, records: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        real(path, records, **kwargs)

    monkeypatch.setattr(store_module, "append_jsonl", failing)
    events = s.events()
    result = await s.update(SessionUpdate(name="Kept", model="scripted/echo"))
    assert result.code == PARTIAL_UPDATE and result.error is not None and not result.error.retryable
    assert result.error.message.startswith("wrote name, then failed")
    changed = await events.__anext__()
    assert changed.type == "state_changed" and changed.data == {"name": "Kept"}  # the model did not land
    calls["n"] = 10
    nothing = await s.update(SessionUpdate(model="scripted/echo"))
    assert nothing.ok
    await events.aclose()


async def test_fork_is_idempotent_and_refuses_a_different_history(tmp_path: Path) -> None:
    agent, hub, requests = build(tmp_path)
    s = hub.sessions.get("src")
    for text in ("one", "two"):
        await drain(agent.invoke("src", text))
    entries = (await s.entries()).entries
    at = [e for e in entries if e.kind == "assistant"][0].id
    assert (await hub.sessions.fork("src", at, "copy")).ok
    path = tmp_path / "sessions"
    stored = sorted(p.name for p in record_files(path))
    copy_lines = lines(agent, "copy")
    assert copy_lines[0]["fastagentFork"] == {"session": "src", "entryId": at}
    assert [e["id"] for e in copy_lines[1:]] == [e.id for e in entries[:2]]  # ids kept: cursors stay valid
    assert (await hub.sessions.fork("src", at, "copy")).ok  # the same fork again: ok, nothing written
    assert lines(agent, "copy") == copy_lines and sorted(p.name for p in record_files(path)) == stored
    other = [e for e in entries if e.kind == "assistant"][1].id
    conflict = await hub.sessions.fork("src", other, "copy")
    assert conflict.code == INVALID_COMMAND and "different history" in conflict.error.message  # type: ignore[union-attr]
    assert (await hub.sessions.fork("nope", at, "x")).code == NO_SUCH_SESSION
    assert (await hub.sessions.fork("src", "00000000", "y")).code == INVALID_COMMAND
    assert (await hub.sessions.fork("src", at, "src")).code == INVALID_COMMAND
    assert (await hub.sessions.fork("src", at, "..")).code == INVALID_COMMAND
    await drain(agent.invoke("copy", "three"))
    users = [m["content"][0]["text"] for m in requests[-1].messages if m["role"] == "user"]  # type: ignore[index]
    assert users == ["one", "three"]


async def test_delete_ends_live_streams_and_leaves_the_list(tmp_path: Path) -> None:
    agent, hub, _ = build(tmp_path)
    s = hub.sessions.get("d")
    await drain(agent.invoke("d", "hello"))
    assert [x.session for x in await hub.sessions.list()] == ["d"]
    events = s.events()
    assert (await s.delete()).ok
    with pytest.raises(SessionEventsClosed) as closed:
        await asyncio.wait_for(events.__anext__(), 5)
    assert closed.value.reason == "deleted"
    assert await hub.sessions.list() == []
    assert (await s.delete()).code == NO_SUCH_SESSION
    assert (await s.entries()).entries == ()
    assert not list((tmp_path / "sessions" / ".locks").glob("s*.lock"))  # the session's lock went too


async def test_writes_wait_for_the_run(tmp_path: Path) -> None:
    gate = asyncio.Event()
    asked = asyncio.Event()

    async def respond(request: ScriptedRequest) -> Any:
        asked.set()
        await gate.wait()
        return "done"

    agent = create_agent(
        model=ScriptedModel.from_callable(respond),
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        cwd=tmp_path,
    )
    hub = session_control(agent)
    s = hub.sessions.get("w")
    running = asyncio.create_task(drain(agent.invoke("w", "go")))
    await asyncio.wait_for(asked.wait(), 10)
    assert (await s.state()).status == "running"
    for result in (await s.update(SessionUpdate(name="n")), await s.delete(), await s.compact()):
        assert result.code == SESSION_BUSY and result.error is not None and result.error.retryable
    gate.set()
    await running
    assert (await s.update(SessionUpdate(name="n"))).ok


async def test_without_writes_the_hub_watches_and_steers_but_refuses_writes(tmp_path: Path) -> None:
    agent, hub, _ = build(tmp_path, writes=False)
    await drain(agent.invoke("g", "hello"))
    s = hub.sessions.get("g")
    capabilities = await hub.capabilities()
    assert capabilities.updatable == () and not capabilities.fork and capabilities.model_selection is None
    refusals = [
        await s.update(SessionUpdate(name="x")),
        await s.delete(),
        await s.compact(),
        await hub.sessions.fork("g", "x", "h"),
    ]
    assert {r.code for r in refusals} == {UNSUPPORTED_CAPABILITY}
    assert (await s.update(SessionUpdate())).ok  # an empty patch is a no-op
    assert (await s.steer(Prompt("x"))).code == "no_active_run"  # run actions still answer


async def test_reads_are_total_and_entries_take_a_cursor(tmp_path: Path) -> None:
    agent, hub, _ = build(tmp_path)
    s = hub.sessions.get("e")
    state = await s.state()
    assert (state.status, state.leaf_entry_id, state.model) == ("idle", None, "scripted/custom")
    assert (await s.entries()).entries == ()
    await drain(agent.invoke("e", "one"))
    everything = (await s.entries()).entries
    await drain(agent.invoke("e", "two"))
    after = await s.entries(since=everything[-1].id)
    assert [(e.kind, e.data["text"]) for e in after.entries] == [("user", "two"), ("assistant", "re: two")]
    assert after.leaf_entry_id == after.entries[-1].id
    assert len((await s.entries(since="unknown!")).entries) == 4  # an unknown cursor: full backfill


async def test_the_listing_is_never_stale_after_an_append(tmp_path: Path) -> None:
    agent, hub, _ = build(tmp_path)
    await drain(agent.invoke("l1", "first prompt of l1"))
    await drain(agent.invoke("l2", "first prompt of l2"))
    listed = {x.session: x for x in await hub.sessions.list()}
    assert listed["l1"].message_count == 2 and listed["l1"].preview == "first prompt of l1"
    assert listed["l1"].created_at <= listed["l1"].updated_at
    await drain(agent.invoke("l1", "more"))
    await hub.sessions.get("l1").update(SessionUpdate(name="Named"))
    listed = {x.session: x for x in await hub.sessions.list()}
    assert (listed["l1"].message_count, listed["l1"].name) == (4, "Named")


async def test_an_unreadable_store_is_sessions_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, hub, _ = build(tmp_path)

    def broken(limit: int | None = 30) -> Any:
        raise SessionError("cannot list sessions in /x: Permission denied")

    monkeypatch.setattr(agent.config.sessions, "list_sessions", broken)
    from fastagent_cli.control import SessionsUnavailable

    with pytest.raises(SessionsUnavailable) as raised:
        await hub.sessions.list()
    assert raised.value.code == "sessions_unavailable"


async def test_entries_carry_thinking_and_tool_arguments_and_the_agents_model_is_selectable(
    tmp_path: Path,
) -> None:
    from fastagent_cli.tools.define import tool

    @tool
    def weather(city: str) -> str:
        """The weather."""
        return f"{city}: sunny"

    def respond(request: ScriptedRequest) -> Any:
        if request.round == 0:
            return {"thinking": "I will look.", "toolCalls": [{"name": "weather", "args": {"city": "Paris"}}]}
        return "sunny"

    agent = create_agent(
        model=ScriptedModel.from_callable(respond),
        tools=[weather],
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        cwd=tmp_path,
    )
    hub = session_control(agent)
    await drain(agent.invoke("w", "weather?"))
    entries = [e.to_json() for e in (await hub.sessions.get("w").entries()).entries]
    assert [e["kind"] for e in entries] == ["user", "assistant", "tool", "assistant"]
    call = entries[1]["data"]
    assert call == {
        "text": "",
        "thinking": "I will look.",
        "toolCalls": [{"id": entries[2]["data"]["toolCallId"], "name": "weather", "args": {"city": "Paris"}}],
    }
    assert entries[3]["data"] == {"text": "sunny"}  # no thinking, no calls: no keys for them
    allowed = (await hub.capabilities()).model_selection
    assert allowed is not None and allowed[0] == "scripted/custom" and "openai/gpt-4.1-mini" in allowed
