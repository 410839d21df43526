"""The preview kit (tool labels, the event reducer, the throttled single writer) and the stop command."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastagent_cli.channels.kit.preview import (
    PreviewPump,
    TurnView,
    apply_event,
    compose,
    humanize_tool_name,
    summarize_tool_args,
    thinking_line,
    tool_lines,
)
from fastagent_cli.channels.kit.stop import STOP_UNAVAILABLE, dispatch_stop, is_stop_text
from fastagent_cli.contract import Completed, Retrying, Text, Thinking, ToolEnded, ToolStarted


def test_tool_names_are_humanized() -> None:
    assert humanize_tool_name("mcp__github__create_issue") == "Github: create issue"
    assert humanize_tool_name("fetch_url") == "Fetch url"
    assert humanize_tool_name("read") == "Read"
    assert humanize_tool_name("my-tool.v2") == "My tool v2"
    long = humanize_tool_name("x" * 200)
    assert len(long) == 80 and long.endswith("…")


def test_arguments_are_summarised_in_48_characters() -> None:
    assert summarize_tool_args({"path": "AGENTS.md", "limit": 10}) == "AGENTS.md"
    assert summarize_tool_args({"command": "ls -la\n  /tmp"}) == "ls -la /tmp"
    assert summarize_tool_args({"flag": True, "items": [1]}) == '{"flag":true,"items":[1]}'
    assert summarize_tool_args({}) == "" and summarize_tool_args(None) == ""
    cut = summarize_tool_args({"q": "word " * 40})
    assert len(cut) == 48 and cut.endswith("…")


def test_the_view_reduces_events() -> None:
    view = TurnView()
    assert apply_event(view, Thinking("Let me  look\nit up."))
    assert apply_event(view, ToolStarted("1", "mcp__github__create_issue", {"title": "Crash"}))
    assert apply_event(view, Retrying(1, 3, 500, "429"))
    assert view.retrying
    assert apply_event(view, ToolEnded("1", True, "denied"))
    assert not view.retrying  # progress closes the retry notice
    assert apply_event(view, Text("Done"))
    assert not apply_event(view, Completed())
    assert tool_lines(view) == "🔧 Github: create issue Crash ✗"
    assert thinking_line(view, 10) == "💭 …ok it up."  # 10 characters of tail
    assert compose("a", "", " ", "b") == "a\n\nb"


async def test_the_pump_writes_the_latest_view_at_most_once_per_throttle() -> None:
    writes: list[tuple[float, int]] = []
    state = {"n": 0}

    async def flush() -> None:
        writes.append((time.monotonic(), state["n"]))
        await asyncio.sleep(0.01)

    errors: list[BaseException] = []
    pump = PreviewPump(flush, throttle_s=0.2, on_error=errors.append)
    for n in range(1, 30):
        state["n"] = n
        pump.touch()
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.25)
    await pump.finish()
    gaps = [b[0] - a[0] for a, b in zip(writes, writes[1:], strict=False)]
    assert writes[0][1] == 1  # the first write goes at once
    assert all(gap >= 0.19 for gap in gaps), gaps
    assert writes[-1][1] == 29  # the latest view is the last one written
    assert 3 <= len(writes) <= 6 and errors == []


async def test_the_pump_reports_the_first_failure_only_and_keeps_going() -> None:
    calls = 0

    async def flush() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError(f"nope {calls}")

    errors: list[BaseException] = []
    pump = PreviewPump(flush, throttle_s=0.01, on_error=errors.append)
    for _ in range(3):
        pump.touch()
        await asyncio.sleep(0.03)
    await pump.finish()
    assert calls == 3 and [str(e) for e in errors] == ["nope 1"]


def test_stop_words() -> None:
    assert is_stop_text(" Stop! ") and is_stop_text("cancel.") and not is_stop_text("stop it")


async def test_stop_without_a_hub_says_it_is_not_enabled() -> None:
    assert await dispatch_stop(None, "s", "[t]") == STOP_UNAVAILABLE
    assert (
        STOP_UNAVAILABLE
        == "⚠️ Stop isn't enabled on this deployment (set session_control = true in fastagent.toml)."
    )


async def test_stop_reports_a_hub_that_raises() -> None:
    class Broken:
        def dispatch(self, session: str, command: Any) -> Any:
            raise ConnectionError("hub down")

    assert await dispatch_stop(Broken(), "s", "[t]") == "⚠️ Could not stop — see the server logs."
