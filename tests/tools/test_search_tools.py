"""search_tools: the matching rules and caps, the result stamp, and activation that survives a restart."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent, open_agent_dir
from fastagent_cli.contract import Completed, Text, ToolEnded, collect
from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
from fastagent_cli.sessions.record import TOOL_ACTIVATION_TYPE
from fastagent_cli.tools.base import Tool, ToolContext, text_result
from fastagent_cli.tools.search_tools import MAX_ACTIVATIONS, MAX_LISTED, search, with_search_tool
from tests.conftest import RunCli, record_files
from tests.definition.fixture_agent import build_fixture_agent, recorded


def _tool(name: str, description: str, *, deferred: bool = True) -> Tool:
    async def execute(args: object, ctx: object) -> object:
        return text_result(f"{name} ran")

    return Tool(name, description, {"type": "object"}, execute, deferred=deferred)  # type: ignore[arg-type]


class Bridge:
    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = list(tools)
        self.active_names = [t.name for t in tools if not t.deferred]

    def active(self) -> list[str]:
        return list(self.active_names)

    def registered(self) -> list[str]:
        return [t.name for t in self.tools]

    def activate(self, names: Sequence[str]) -> list[str]:
        added = [n for n in names if n in self.registered() and n not in self.active_names]
        self.active_names += added
        return added


def _search(query: str, tools: Sequence[Tool], bridge: Bridge | None = None) -> tuple[str, Bridge]:
    bridge = bridge or Bridge(tools)
    ctx = ToolContext(cwd=".", tools=bridge)
    return search(query, ctx, {t.name: t for t in tools}), bridge


CATALOG = [
    _tool("get_weather", "Current weather for a city.\nMore."),
    _tool("get_forecast", "Seven-day weather forecast."),
    _tool("send_email", "Send an email message."),
    _tool("lookup", "Look things up.", deferred=False),
]


def test_keywords_must_all_match_name_or_description() -> None:
    text, bridge = _search("weather forecast", CATALOG)
    assert text == "Activated: get_forecast — Seven-day weather forecast. These tools are callable now."
    assert bridge.active() == ["lookup", "get_forecast"]


def test_several_matches_activate_together_with_first_description_lines() -> None:
    text, _ = _search("WEATHER", CATALOG)
    assert text.startswith("Activated: get_weather — Current weather for a city; get_forecast")


def test_exact_name_always_matches() -> None:
    tools = [_tool(f"weather_{i}", "weather tool") for i in range(8)] + [_tool("x", "unrelated words")]
    text, bridge = _search("x", tools)
    assert text == "Activated: x — unrelated words. These tools are callable now."
    assert bridge.active() == ["x"]


def test_at_most_five_per_search() -> None:
    tools = [_tool(f"weather_{i:02d}", "weather tool") for i in range(12)]
    text, bridge = _search("weather", tools)
    assert text.startswith('12 inactive tools matched "weather" — too many to activate at once')
    assert f"Matches: {', '.join(f'weather_{i:02d}' for i in range(MAX_LISTED))} … and 2 more." in text
    assert bridge.active() == []
    few = tools[:MAX_ACTIVATIONS]
    text, bridge = _search("weather", few)
    assert text.startswith("Activated:") and len(bridge.active()) == MAX_ACTIVATIONS


def test_a_miss_lists_up_to_ten_inactive_tools() -> None:
    tools = [_tool(f"t{i:02d}", f"tool number {i}") for i in range(13)]
    text, _ = _search("spaceship", tools)
    assert text.startswith('No tools matched "spaceship". Inactive tools: t00 — tool number 0; ')
    assert "t09 — tool number 9 … and 3 more — search with different keywords." in text
    assert "t10" not in text


def test_already_active_and_nothing_left() -> None:
    text, bridge = _search("look", CATALOG)
    assert text == "Already active (call directly): lookup — Look things up."
    _search("weather", CATALOG, bridge)
    _search("email", CATALOG, bridge)
    text, _ = _search("zzz", CATALOG, bridge)
    assert text == "All tools are already active — nothing to discover."


def test_no_keywords_and_no_bridge() -> None:
    assert _search("!!!", CATALOG)[0].endswith(
        "contains no searchable keywords — describe the capability you need."
    )
    assert search("weather", ToolContext(cwd="."), {}) == (
        "tool activation is unavailable outside a conversation turn."
    )


def test_loader_is_mounted_only_with_deferred_tools() -> None:
    plain = [_tool("a", "A.", deferred=False)]
    assert with_search_tool(plain) == (plain, [])
    tools, warnings = with_search_tool([*plain, _tool("b", "B.")])
    assert [t.name for t in tools] == ["a", "b", "search_tools"] and warnings == []
    assert tools[-1].sequential and not tools[-1].deferred


def test_authored_deferred_loader_is_kept_active() -> None:
    mine = _tool("search_tools", "My loader.")
    tools, warnings = with_search_tool([mine, _tool("b", "B.")])
    assert not tools[0].deferred and tools[0].sequential and len(warnings) == 2


async def test_activation_is_stamped_recorded_and_offered_next_round(tmp_path: Path) -> None:
    offered: list[list[str]] = []

    def respond(request: ScriptedRequest) -> dict[str, Any] | str:
        offered.append([t.name for t in request.tools])
        if request.round == 0:
            return {"toolCalls": [{"name": "search_tools", "args": {"query": "email"}}]}
        if request.round == 1:
            return {"toolCalls": [{"name": "send_email", "args": {}}]}
        return "sent"

    tools, _ = with_search_tool(CATALOG)  # at L1 the loader is mounted explicitly
    agent = create_agent(model=ScriptedModel.from_callable(respond), tools=tools, cwd=tmp_path)
    events = [e async for e in agent.invoke("s", "mail bob")]
    assert isinstance(events[-1], Completed)
    assert "".join(e.delta for e in events if isinstance(e, Text)) == "sent"
    assert offered[0] == ["lookup", "search_tools"]  # deferred tools stay out of the request
    assert offered[1] == ["lookup", "search_tools", "send_email"]
    ended = [e for e in events if isinstance(e, ToolEnded)]
    assert [e.is_error for e in ended] == [False, False]
    record = await agent.config.sessions.open_if_exists("s")
    assert record is not None
    results = [e["message"] for e in record.entries if e.get("type") == "message"]
    stamped = [m for m in results if m.get("role") == "toolResult" and m.get("toolName") == "search_tools"]
    assert stamped[0]["addedToolNames"] == ["send_email"]
    deltas = [e["data"] for e in record.entries if e.get("customType") == TOOL_ACTIVATION_TYPE]
    assert deltas == [{"names": ["send_email"]}]


async def test_activation_survives_a_reopen_on_the_same_sessions_dir(tmp_path: Path) -> None:
    workspace, agent_dir = build_fixture_agent(tmp_path.resolve())
    sessions = str(tmp_path / "sessions")
    first = open_agent_dir(workspace, sessions_dir=sessions)
    try:
        assert (await collect(first.agent.invoke("conv", "find weather"))).text == "ok: find weather"
    finally:
        await first.aclose()
    second = open_agent_dir(workspace, sessions_dir=sessions)  # a fresh process would do the same
    try:
        events = [e async for e in second.agent.invoke("conv", "use weather now")]
        other = [e async for e in second.agent.invoke("other", "use weather now")]
    finally:
        await second.aclose()
    ended = [e for e in events if isinstance(e, ToolEnded)]
    assert [(e.is_error, e.content) for e in ended] == [(False, [{"type": "text", "text": "sunny in Paris"}])]
    not_found = [e for e in other if isinstance(e, ToolEnded)]
    assert not_found[0].is_error and not_found[0].content[0]["text"] == "Tool weather not found"
    requests = recorded(agent_dir)
    assert "weather" not in requests[0]["tools"]  # turn 1 starts without it
    assert "weather" in requests[2]["tools"]  # turn 2, after the reopen, offers it at once


@pytest.mark.slow
def test_activation_survives_a_process_restart(tmp_path: Path, run_cli: RunCli) -> None:
    workspace, agent_dir = build_fixture_agent(tmp_path.resolve())
    first = run_cli("invoke", "find weather", str(workspace), "--session", "chat-1", "--json")
    assert first.returncode == 0, first.stderr
    events = [json.loads(line) for line in first.stdout.splitlines()]
    ended = next(e for e in events if e["type"] == "tool_ended")
    assert ended["content"][0]["text"].startswith("Activated: weather — Get the current weather forecast")
    second = run_cli("invoke", "use weather", str(workspace), "--session", "chat-1", "--json")
    assert second.returncode == 0, second.stderr
    events = [json.loads(line) for line in second.stdout.splitlines()]
    ended = next(e for e in events if e["type"] == "tool_ended")
    assert ended == {
        "type": "tool_ended",
        "id": ended["id"],
        "isError": False,
        "content": [{"type": "text", "text": "sunny in Paris"}],
    }
    (session_file,) = record_files(agent_dir / ".fastagent" / "sessions")
    entries = [json.loads(line) for line in session_file.read_text().splitlines()]
    assert [e["data"] for e in entries if e.get("customType") == TOOL_ACTIVATION_TYPE] == [
        {"names": ["weather"]}
    ]
