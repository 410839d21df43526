"""The owner's face on the session hub (``opened.sessions``): read (never repairs), list, and
settings writes validated as a whole and made under the session's lease."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import OpenedAgent, open_agent_dir
from fastagent_cli.contract import Completed, collect
from fastagent_cli.control import UNSUPPORTED_CAPABILITY, SessionUpdate
from fastagent_cli.errors import ModelError, SessionError, UsageError
from fastagent_cli.sessions.store import FileSessionStore
from tests.conftest import AgentFactory


@pytest.fixture
async def opened(make_agent: AgentFactory) -> Any:
    agent = open_agent_dir(make_agent(config='coding_tools = false\nthinking_level = "low"\n'))
    yield agent
    await agent.aclose()


def lines(path: Path | None) -> list[dict[str, Any]]:
    assert path is not None
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_read_never_repairs_and_the_next_turn_does(opened: OpenedAgent) -> None:
    assert await opened.sessions.read("s") is None
    await collect(opened.agent.invoke("s", "hello"))
    path = opened.sessions.location("s")
    assert path is not None and path.parent.parent == opened.sessions_dir
    call = {"type": "toolCall", "id": "c1", "name": "lookup", "arguments": {}}
    dangling = {"role": "assistant", "content": [call], "stopReason": "toolUse", "usage": {}}
    last = lines(path)[-1]["id"]
    with path.open("a", encoding="utf-8") as fh:  # a crash between the call and its result
        fh.write(json.dumps({"type": "message", "id": "d1", "parentId": last, "message": dangling}) + "\n")
    before = path.read_bytes()

    view = await opened.sessions.read("s")
    assert view is not None and path.read_bytes() == before  # nothing written
    assert [m["role"] for m in view.messages] == ["user", "assistant", "assistant"]
    assert (view.message_count, view.leaf_id, view.settings.spec) == (3, "d1", "scripted/echo")

    await collect(opened.agent.invoke("s", "again"))  # a turn's lease repairs the record first
    results = [e["message"] for e in lines(path) if e.get("message", {}).get("role") == "toolResult"]
    assert [(r["toolCallId"], r["isError"]) for r in results] == [("c1", True)]


async def test_update_writes_settings_the_engine_runs_with(opened: OpenedAgent) -> None:
    await collect(opened.agent.invoke("s", "hi"))
    assert opened.sessions.defaults().thinking == "low"
    settings = await opened.sessions.update("s", model="scripted/other:high")
    assert (settings.spec, settings.thinking) == ("scripted/other", "high")
    kinds = [
        (e["type"], e.get("modelId") or e.get("thinkingLevel")) for e in lines(opened.sessions.location("s"))
    ]
    assert kinds[-2:] == [("model_change", "other"), ("thinking_level_change", "high")]
    settings = await opened.sessions.update("s", model="scripted/echo", thinking="minimal")
    view = await opened.sessions.read("s")
    assert view is not None and view.settings == settings
    assert (view.settings.spec, view.settings.thinking) == ("scripted/echo", "minimal")
    result = await collect(opened.agent.invoke("s", "who answers?"))
    assert result.text == "echo: who answers?"


async def test_a_rejected_update_writes_nothing(opened: OpenedAgent, tmp_path: Path) -> None:
    await collect(opened.agent.invoke("s", "hi"))
    path = opened.sessions.location("s")
    assert path is not None
    before = path.read_bytes()
    with pytest.raises(ModelError, match='unknown provider "nosuch"'):
        await opened.sessions.update("s", model="nosuch/model", thinking="high")
    with pytest.raises(UsageError, match=r"openai/gpt-4.1-mini supports thinking levels: off \(not 'high'\)"):
        await opened.sessions.update("s", model="openai/gpt-4.1-mini", thinking="high")
    assert path.read_bytes() == before
    with pytest.raises(SessionError, match="no session 'missing'"):
        await opened.sessions.update("missing", thinking="high")
    assert opened.sessions.location("missing") is None  # nothing was created


async def test_update_fails_at_once_while_a_turn_holds_the_lease(opened: OpenedAgent) -> None:
    await collect(opened.agent.invoke("s", "hi"))
    other_process = FileSessionStore(opened.sessions_dir, opened.workspace)  # the same files
    release = other_process.try_lease("s")
    assert release is not None
    try:
        with pytest.raises(SessionError, match="session s is busy"):
            await opened.sessions.update("s", thinking="high")
    finally:
        release()
    assert (await opened.sessions.update("s", thinking="high")).thinking == "high"


async def test_carry_writes_only_what_differs_from_the_defaults(opened: OpenedAgent) -> None:
    defaults = opened.sessions.defaults()
    await opened.sessions.carry("plain", defaults)
    assert opened.sessions.location("plain") is None  # nothing to carry
    await collect(opened.agent.invoke("a", "hi"))
    chosen = await opened.sessions.update("a", model="scripted/echo:xhigh")
    await opened.sessions.carry("b", chosen)
    kinds = [e["type"] for e in lines(opened.sessions.location("b"))]
    assert kinds == ["session", "thinking_level_change"]  # the model is the default one
    view = await opened.sessions.read("b")
    assert view is not None and view.settings.thinking == "xhigh"


async def test_list_is_newest_first_with_the_first_prompt(opened: OpenedAgent) -> None:
    assert await opened.sessions.list() == []
    for session, text in (("one", "first question"), ("two", "second\nquestion")):
        await collect(opened.agent.invoke(session, text))
    listed = await opened.sessions.list()
    assert {(s.session, s.first_prompt) for s in listed} == {
        ("one", "first question"),
        ("two", "second question"),
    }
    assert listed == sorted(listed, key=lambda s: s.modified, reverse=True)
    assert [s.session for s in await opened.sessions.list(limit=1)] == [listed[0].session]
    assert opened.sessions.model_specs() == opened.registry.specs()


async def test_completed_reports_the_resolved_model(opened: OpenedAgent) -> None:
    events = [e async for e in opened.agent.invoke("s", "hi")]
    assert isinstance(events[-1], Completed) and events[-1].data["model"] == "scripted/echo"


async def test_an_owner_settings_write_is_reported_to_the_hubs_watchers(opened: OpenedAgent) -> None:
    """Chat's /model and /thinking go through the hub's write path: the web chat, attach and
    /control/.../events see them as state_changed, like an update over the control plane."""
    await collect(opened.agent.invoke("s", "hi"))
    events = opened.control.sessions.get("s").events()
    try:
        await opened.sessions.update("s", model="scripted/other:high")
        changed = await events.__anext__()
        assert changed.type == "state_changed"
        assert (changed.data["model"], changed.data["thinkingLevel"]) == ("scripted/other", "high")
        await opened.sessions.pin_model("s", "scripted/echo")
        pinned = await events.__anext__()
        assert (pinned.type, pinned.data["model"]) == ("state_changed", "scripted/echo")
        await opened.sessions.update("s", thinking="minimal")
        assert (await events.__anext__()).data["thinkingLevel"] == "minimal"
    finally:
        await events.aclose()


async def test_the_owner_and_the_control_plane_write_settings_the_same_way(opened: OpenedAgent) -> None:
    """One write path: chat's /model + /thinking and a /control update of the same fields append
    the same entries and report the same state_changed; only the control plane is gated by
    session_control (the owner's face is the hub's own, not a second writer)."""
    await collect(opened.agent.invoke("by-owner", "hi"))
    await collect(opened.agent.invoke("by-plane", "hi"))
    plane = opened.control.sessions.get("by-plane")
    refused = await plane.update(SessionUpdate(model="scripted/other", thinking_level="high"))
    assert refused.code == UNSUPPORTED_CAPABILITY  # session_control is off in this agent
    assert (
        await opened.sessions.update("by-owner", model="scripted/other", thinking="high")
    ).thinking == "high"

    opened.enable_session_control()
    owner_events = opened.control.sessions.get("by-owner").events()
    plane_events = plane.events()
    try:
        await opened.sessions.update("by-owner", model="scripted/echo", thinking="minimal")
        assert (await plane.update(SessionUpdate(model="scripted/echo", thinking_level="minimal"))).ok
        owner_said, plane_said = await owner_events.__anext__(), await plane_events.__anext__()
    finally:
        await owner_events.aclose()
        await plane_events.aclose()
    assert owner_said.type == plane_said.type == "state_changed"
    assert owner_said.data == plane_said.data == {"model": "scripted/echo", "thinkingLevel": "minimal"}

    def settings(session: str) -> list[dict[str, Any]]:
        kinds = ("model_change", "thinking_level_change")
        return [
            {k: v for k, v in e.items() if k not in ("id", "parentId", "timestamp")}
            for e in lines(opened.sessions.location(session))
            if e["type"] in kinds
        ]

    assert settings("by-plane") == settings("by-owner")[2:]
    assert [e["type"] for e in settings("by-plane")] == ["model_change", "thinking_level_change"]
