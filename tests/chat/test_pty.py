"""The real ``fastagent chat`` process in a pseudo-terminal: prompt, streamed Markdown, tool line,
status line, Ctrl+C during a slow tool, Ctrl+D."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat.harness import session_lines, write_agent
from tests.chat.pty_run import PtyProcess
from tests.conftest import cli_command, record_files

TOOLS = {
    "tools/get_weather.py": '''
from fastagent_cli import tool


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: 21C and sunny"
''',
    "tools/slow_tool.py": '''
import asyncio

from fastagent_cli import tool


@tool
async def slow_tool(seconds: float) -> str:
    """Takes its time."""
    print("SLOW-STARTED", flush=True)
    await asyncio.sleep(seconds)
    return "finally"
''',
}

pytestmark = pytest.mark.slow


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[PtyProcess, Path]]:
    agent = write_agent(tmp_path / "agent", TOOLS)
    process = PtyProcess([*cli_command(), "chat", str(agent)], cwd=tmp_path)
    try:
        yield process, agent
    finally:
        process.close()


def test_chat_in_a_terminal(terminal: tuple[PtyProcess, Path]) -> None:
    term, agent = terminal
    term.read_until("scripted/chat · thinking medium · session chat-")  # the status toolbar
    term.read_until("› ")
    mark = len(term.text)
    term.send("weather in Paris?\r")
    screen = term.read_until("It is sunny in Paris.", start=mark)
    assert "✓ get_weather city=Paris" in screen[mark:]
    term.read_until(" tok (", start=mark)  # the status line now counts tokens

    mark = len(term.text)
    term.send("something slow\r")
    term.read_until("SLOW-STARTED", start=mark)
    term.send("\x03")
    term.read_until("⏹ interrupted", start=mark)
    mark = len(term.text)
    term.send("hello\r")
    term.read_until("Hello from the script.", start=mark)

    term.send("\x04")
    assert term.wait() == 0
    (path,) = record_files(agent / ".fastagent" / "sessions")
    messages = [e["message"] for e in session_lines(path) if e["type"] == "message"]
    assert [m["role"] for m in messages][-4:] == ["assistant", "toolResult", "user", "assistant"]
    assert (agent / ".fastagent" / "chat_history").is_file()


async def test_a_local_server_without_usage_and_a_cut_off_answer(tmp_path: Path) -> None:
    """llama-cpp-python sends no usage and a rambling model stops at the output limit: the status
    says the server reported no usage (not ``0 tok``) and the answer is marked as cut off."""
    import asyncio
    import json

    from tests.fakes.fake_providers import FakeOpenAI, openai_reply

    async with FakeOpenAI() as fake:
        agent = tmp_path / "agent"
        agent.mkdir()
        (agent / "fastagent.toml").write_text('model = "local/small"\ncoding_tools = false\n')
        models = {"providers": {"local": {"baseUrl": fake.base_url, "models": [{"id": "small"}]}}}
        (agent / "models.json").write_text(json.dumps(models))
        fake.enqueue_stream(openai_reply("on and on and on", finish_reason="length"))
        term = PtyProcess([*cli_command(), "chat", str(agent)], cwd=tmp_path)
        try:
            await asyncio.to_thread(term.read_until, "› ")
            mark = len(term.text)
            term.send("ramble\r")
            screen = await asyncio.to_thread(term.read_until, "✂ cut off", start=mark)
            assert "on and on and on" in screen[mark:]
            assert "the answer reached the output token limit" in screen[mark:]
            await asyncio.to_thread(term.read_until, "no token usage reported by the server", start=mark)
            assert " 0 tok" not in term.text[mark:]
            term.send("\x04")
            assert await asyncio.to_thread(term.wait) == 0
        finally:
            term.close()
