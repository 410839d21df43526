"""Slash commands and their completion, in the running chat."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input

from fastagent_cli.chat.completion import SlashCompleter
from tests.chat.harness import ChatHarness, session_lines, write_agent

SKILL = "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\nSteps.\n"


async def test_help_tools_session_and_unknown(chat: ChatHarness) -> None:
    out = await chat.submit("/help")
    for name in (
        "/new",
        "/resume [n|id]",
        "/model [spec]",
        "/thinking [level]",
        "/tools",
        "/skills",
        "/copy",
    ):
        assert name in out
    assert "Alt+Enter, Esc Enter or Ctrl+J" in out and "Ctrl+T" in out

    out = await chat.submit("/tools")
    assert "Tools (2)" in out and "get_weather" in out and "Current weather for a city." in out

    out = await chat.submit("/session")
    assert chat.ctl.session in out and "not written yet" in out
    await chat.submit("hello")
    out = await chat.submit("/session")
    assert "3 entries" not in out and "2 entries, 2 messages" in out
    path = chat.ctl.session_path
    assert path is not None and str(path) in "".join(out.split())

    out = await chat.submit("/frobnicate now")
    assert "unknown command /frobnicate" in out
    out = await chat.submit("//etc/hosts is a file")  # // sends the text with one slash
    assert "Hello from the script." in out
    users = [e["message"] for e in session_lines(path) if e.get("type") == "message"]
    assert users[-2]["content"][0]["text"] == "/etc/hosts is a file"

    out = await chat.submit("/thinking-display off")
    assert "hidden" in out and not chat.app.renderer.show_thinking
    out = await chat.submit("/thinking")
    assert "supports: off, minimal, low, medium, high, xhigh" in out

    chat.send("/exit\r")
    assert await chat.finish() == 0


async def test_skills_and_skill_commands(tmp_path: Path) -> None:
    agent_dir = write_agent(tmp_path / "agent", {"skills/release-notes/SKILL.md": SKILL})
    with create_pipe_input() as inp:
        chat = ChatHarness(agent_dir, inp)
        await chat.start()
        try:
            out = await chat.submit("/skills")
            assert "release-notes" in out and "Write release notes from the git log." in out
            out = await chat.submit("/release-notes for v1.2")
            assert "Hello from the script." in out
            path = chat.ctl.session_path
            assert path is not None
            sent = next(e["message"] for e in session_lines(path) if e.get("type") == "message")
            text = sent["content"][0]["text"]
            assert text.startswith('Use the "release-notes" skill') and "SKILL.md" in text
            assert text.endswith("for v1.2")
        finally:
            await chat.close()


async def test_copy_last_answer(chat: ChatHarness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = await chat.submit("/copy")
    assert "nothing to copy yet" in out
    await chat.submit("weather in Paris")
    sink = tmp_path / "clip.txt"
    program = tmp_path / "bin" / "wl-copy"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\nexec /bin/sh -c 'cat > {sink}'\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{program.parent}:/usr/bin:/bin")
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    monkeypatch.delenv("DISPLAY", raising=False)
    out = await chat.submit("/copy")
    assert "copied with wl-copy" in out
    assert sink.read_text(encoding="utf-8") == "It is **sunny** in Paris."  # the Markdown source


async def test_completion(chat: ChatHarness) -> None:
    completer = SlashCompleter(chat.ctl)

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert "model" in complete("/mo") and "new" not in complete("/mo")
    assert complete("hello /mo") == []
    specs = complete("/model sonnet")
    assert specs and all("sonnet" in s for s in specs)
    assert "scripted/echo" in complete("/model echo")
    assert complete("/thinking h") == ["high"]
    assert complete("/thinking-display o") == ["on", "off"]
    await chat.submit("weather for completion")
    assert chat.ctl.session in complete("/resume ")
