"""The chat's run controls: typing while an answer streams steers it, Alt+Enter queues a
follow-up, unsent text starts the next prompt, and /compact."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import create_pipe_input

from tests.chat.harness import ChatHarness, ToolProbe, session_lines, write_agent


def _users(path: Path) -> list[str]:
    return [
        line["message"]["content"][0]["text"]
        for line in session_lines(path)
        if line.get("type") == "message" and line["message"]["role"] == "user"
    ]


def _roles(path: Path) -> list[str]:
    return [line["message"]["role"] for line in session_lines(path) if line.get("type") == "message"]


@pytest.fixture
async def slow_chat(agent_dir: Path) -> AsyncIterator[ChatHarness]:
    with create_pipe_input() as inp:
        harness = ChatHarness(agent_dir, inp, probe=ToolProbe(weather_delay=1.0))
        await harness.start()
        try:
            yield harness
        finally:
            await harness.close()


async def test_typing_while_the_tool_runs_steers_the_same_run(slow_chat: ChatHarness) -> None:
    chat = slow_chat
    before = chat.app.prompts_shown
    mark = len(chat.output)
    chat.send("weather now\r")
    await asyncio.wait_for(chat.probe.weather_started.wait(), 20)
    chat.send("use celsius\r")  # Enter while the answer streams: a steer
    await chat.wait(lambda: chat.app.prompts_shown > before, "the prompt after the run")
    out = chat.output[mark:]
    assert chat.app.prompts_shown == before + 1  # one run took both prompts
    assert out.index("get_weather") < out.index("› use celsius") < out.index("Hello from the script.")
    path = chat.ctl.session_path
    assert path is not None
    assert _users(path) == ["weather now", "use celsius"]
    # delivered after the tool batch, before the next model call
    assert _roles(path) == ["user", "assistant", "toolResult", "user", "assistant"]


async def test_alt_enter_queues_a_follow_up_answered_after_the_answer(slow_chat: ChatHarness) -> None:
    chat = slow_chat
    before = chat.app.prompts_shown
    mark = len(chat.output)
    chat.send("weather now\r")
    await asyncio.wait_for(chat.probe.weather_started.wait(), 20)
    chat.send("then say hello\x1b\r")  # Alt+Enter: a follow-up
    await chat.wait(
        lambda: chat.app.renderer.pending[1] == ("then say hello",), "the follow-up shown as queued"
    )
    await chat.wait(lambda: chat.app.prompts_shown > before, "the prompt after the run")
    out = chat.output[mark:]
    assert out.index("sunny") < out.index("› then say hello") < out.index("Hello from the script.")
    path = chat.ctl.session_path
    assert path is not None
    assert _users(path) == ["weather now", "then say hello"]
    assert _roles(path) == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]


async def test_text_typed_and_not_sent_starts_the_next_prompt(slow_chat: ChatHarness) -> None:
    chat = slow_chat
    before = chat.app.prompts_shown
    chat.send("weather now\r")
    await asyncio.wait_for(chat.probe.weather_started.wait(), 20)
    chat.send("draftx\x7f")  # typed, Backspace, never sent
    await chat.wait(lambda: chat.app.prompts_shown > before, "the prompt after the run")
    out = await chat.submit("")  # Enter on the prefilled prompt
    assert "Hello from the script." in out
    path = chat.ctl.session_path
    assert path is not None
    assert _users(path) == ["weather now", "draft"]


async def test_compact_summarises_and_reports_nothing_to_compact(tmp_path: Path) -> None:
    agent_dir = write_agent(tmp_path / "agent")
    toml = agent_dir / "fastagent.toml"
    toml.write_text(toml.read_text() + "\n[compaction]\nkeep_recent_tokens = 8\n", encoding="utf-8")
    with create_pipe_input() as inp:
        chat = ChatHarness(agent_dir, inp)
        await chat.start()
        try:
            out = await chat.submit("/compact")
            assert "does not exist" in out  # a new chat has nothing yet
            await chat.submit("first question")
            await chat.submit("hello there")
            out = await chat.submit("/compact keep the first question")
            assert "compacted session" in out, out
            path = chat.ctl.session_path
            assert path is not None
            compactions = [line for line in session_lines(path) if line["type"] == "compaction"]
            assert len(compactions) == 1
            entry: dict[str, Any] = compactions[0]
            assert entry["summary"].startswith("Hello from the script.")  # the script answered
            assert entry["firstKeptEntryId"] and entry["tokensBefore"] > 0
            out = await chat.submit("/compact")
            assert "Already compacted" in out
            out = await chat.submit("how is it now")
            assert "Hello from the script." in out  # the compacted session keeps working
        finally:
            await chat.close()
