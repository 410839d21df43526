"""The terminal chat driven through prompt-toolkit's pipe input on the scripted model."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from prompt_toolkit.input import create_pipe_input

from fastagent_cli.chat.status import status_text
from fastagent_cli.sessions.record import INTERRUPTED_TOOL_TEXT
from fastagent_cli.sessions.store import FileSessionStore
from tests.chat.harness import ChatHarness, session_lines


def _messages(path: Path) -> list[dict[str, object]]:
    return [line["message"] for line in session_lines(path) if line.get("type") == "message"]


async def test_two_turns_with_a_tool_call(chat: ChatHarness) -> None:
    first = await chat.submit("what is the weather in Paris?")
    assert "Let me look." in first
    assert "✓ get_weather city=Paris" in first and "#1" in first
    assert "It is sunny in Paris." in first  # rendered Markdown: no ** left
    assert "**" not in first

    second = await chat.submit("thanks!")
    assert "Hello from the script." in second

    path = chat.ctl.session_path
    assert path is not None and path.is_file()
    roles = [m["role"] for m in _messages(path)]
    assert roles == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
    # the status line sums usage of the session's turns
    status = status_text(chat.ctl.status())
    assert "scripted/chat" in status and chat.ctl.session in status and "thinking medium" in status
    assistants = [m for m in _messages(path) if m["role"] == "assistant"]
    recorded = sum(int(m["usage"]["input"]) for m in assistants)  # type: ignore[index]
    assert chat.ctl.usage.input == recorded and recorded > 120 + 50
    assert "tok" in status
    assert chat.ctl.last_answer == "Hello from the script."

    expanded = await chat.submit("/expand 1")
    assert "Paris: 21C and sunny" in expanded


async def test_new_starts_another_session_and_resume_returns(chat: ChatHarness) -> None:
    await chat.submit("weather please")
    first_session = chat.ctl.session
    first_path = chat.ctl.session_path
    assert first_path is not None
    first_count = len(session_lines(first_path))

    out = await chat.submit("/new")
    assert "new session" in out
    assert chat.ctl.session != first_session
    await chat.submit("hi there")
    second_session = chat.ctl.session
    second_path = chat.ctl.session_path
    assert second_path is not None and second_path != first_path
    assert len(session_lines(first_path)) == first_count  # the old session was not touched
    os.utime(first_path, (time.time() - 120, time.time() - 120))  # make the listing order certain

    mark = len(chat.output)
    chat.send("/resume\r")
    await chat.wait_text("Resume which session?")
    listing = chat.output[mark:]
    assert "weather please" in listing and "hi there" in listing and "2m ago" in listing
    assert listing.index("hi there") < listing.index("weather please")  # newest first
    out = await chat.submit("2")
    assert f"resumed session {first_session}" in out
    assert "It is sunny in Paris." in out  # the last exchange is shown again
    assert chat.ctl.session == first_session
    assert chat.ctl.usage.input == 120 + _first_round_input(first_path)

    await chat.submit("more weather")
    assert len(session_lines(first_path)) > first_count  # the turn went to the resumed session

    out = await chat.submit(f"/resume {second_session}")
    assert "resumed session" in out and chat.ctl.session == second_session


def _first_round_input(path: Path) -> int:
    assistants = [m for m in _messages(path) if m["role"] == "assistant"]
    usage = assistants[0]["usage"]
    assert isinstance(usage, dict)
    return int(usage["input"])


async def test_model_is_a_per_session_override(chat: ChatHarness) -> None:
    await chat.submit("hello")
    out = await chat.submit("/model scripted/echo")
    assert "model scripted/echo for session" in out
    path = chat.ctl.session_path
    assert path is not None
    changes = [line for line in session_lines(path) if line["type"] == "model_change"]
    assert [(c["provider"], c["modelId"]) for c in changes] == [("scripted", "echo")]
    assert "scripted/echo" in status_text(chat.ctl.status())

    out = await chat.submit("ping")
    assert "echo: ping" in out  # the engine applied the override to the next turn

    bad = await chat.submit("/model nosuch/provider-model")
    assert "unknown provider" in bad

    out = await chat.submit("/thinking high")
    assert "thinking high" in out
    levels = [
        line["thinkingLevel"] for line in session_lines(path) if line["type"] == "thinking_level_change"
    ]
    assert levels == ["high"]
    bad = await chat.submit("/thinking extreme")
    assert "supports thinking levels" in bad

    # a new session keeps the chosen model: it is written before its first turn
    await chat.submit("/new")
    out = await chat.submit("pong")
    assert "echo: pong" in out
    new_path = chat.ctl.session_path
    assert new_path is not None and new_path != path
    kinds = [line["type"] for line in session_lines(new_path)]
    assert kinds[:3] == ["session", "model_change", "thinking_level_change"]


async def test_ctrl_c_interrupts_a_slow_tool_and_the_next_turn_works(chat: ChatHarness) -> None:
    before = chat.app.prompts_shown
    mark = len(chat.output)
    chat.send("something slow\r")
    await asyncio.wait_for(chat.probe.slow_started.wait(), 20)
    chat.send("\x03")
    await chat.wait(lambda: chat.app.prompts_shown > before, "the prompt after Ctrl+C")
    out = chat.output[mark:]
    assert "interrupted" in out and "slow_tool" in out
    assert chat.probe.slow_cancelled.is_set()  # the tool's work was really cancelled

    path = chat.ctl.session_path
    assert path is not None
    lines = session_lines(path)  # every line is whole JSON
    results = [m for m in _messages(path) if m["role"] == "toolResult"]
    assert len(results) == 1 and results[0]["isError"] is True
    store = FileSessionStore(chat.ctl.opened.sessions_dir, chat.ctl.opened.workspace)
    record = await store.open_if_exists(chat.ctl.session)
    assert record is not None and record.dangling_tool_calls() == []
    assert len(lines) == len(session_lines(path))  # nothing needed repair

    out = await chat.submit("hello again")
    assert "Hello from the script." in out
    assert _messages(path)[-1]["role"] == "assistant"
    assert INTERRUPTED_TOOL_TEXT not in path.read_text(encoding="utf-8")


async def test_keys_newline_paste_history_and_exit(chat: ChatHarness) -> None:
    await chat.submit("/model scripted/echo")
    out = await chat.submit("line one\x1b\rline two")  # Alt+Enter (Esc Enter) inserts a newline
    assert "echo: line one" in out and "line two" in out
    out = await chat.submit("alpha\nbeta")  # Ctrl+J inserts a newline too
    assert "echo: alpha" in out and "beta" in out
    out = await chat.submit("\x1b[200~pasted\r\nblock\x1b[201~")  # bracketed paste keeps newlines
    assert "echo: pasted" in out and "block" in out
    path = chat.ctl.session_path
    assert path is not None
    user_texts = [m["content"][0]["text"] for m in _messages(path) if m["role"] == "user"]  # type: ignore[index]
    assert user_texts == ["line one\nline two", "alpha\nbeta", "pasted\nblock"]

    history = chat.opened.state_root / "chat_history"
    assert "+line one" in history.read_text(encoding="utf-8")

    chat.send("\x03")  # first Ctrl+C on an empty prompt only arms
    await asyncio.sleep(0.2)
    assert chat.task is not None and not chat.task.done()
    chat.send("\x03")
    assert await chat.finish() == 0


async def test_ctrl_d_exits_and_ctrl_c_clears_typed_text(chat: ChatHarness) -> None:
    chat.send("half typed")
    chat.send("\x03")  # clears the text, does not arm exit
    chat.send("\x03")  # arms
    await asyncio.sleep(0.2)
    assert chat.task is not None and not chat.task.done()
    chat.send("\x04")
    assert await chat.finish() == 0


async def test_resuming_at_start_shows_the_session(agent_dir: Path) -> None:
    with create_pipe_input() as inp:
        first = ChatHarness(agent_dir, inp, session="kept-session")
        await first.start()
        await first.submit("weather in Paris")
        first.send("\x04")
        await first.finish()
    with create_pipe_input() as inp:
        again = ChatHarness(agent_dir, inp, session="kept-session")
        await again.start()
        try:
            assert "resumed session kept-session: 4 messages" in again.output
            assert again.ctl.usage.output > 0  # summed from the record's assistant messages
            assert "tok" in status_text(again.ctl.status())
        finally:
            await again.close()


async def test_a_run_whose_event_stream_closed_under_the_chat_is_shown_from_the_record(
    chat: ChatHarness,
) -> None:
    """Chat draws runs from the session's events: a watcher the hub closes for falling behind (its
    buffer cap, here 2 events) still ends the turn with the whole answer, read from the record."""
    hub = chat.ctl.opened._engine.hub  # the engine's event hub (no public knob for its cap)
    hub.cap = 2
    out = await chat.submit("weather in Paris?")
    assert "Let me look." in out and "It is sunny in Paris." in out
    assert "get_weather" in out
    hub.cap = 10_000
    assert "Hello from the script." in await chat.submit("thanks")
