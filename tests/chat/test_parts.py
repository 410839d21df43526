"""Tool summaries, usage totals, skills frontmatter and the clipboard."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from fastagent_cli.chat.clipboard import copy_text, osc52
from fastagent_cli.chat.skills import parse_frontmatter
from fastagent_cli.chat.status import StatusInfo, UsageTotals, status_text
from fastagent_cli.chat.tool_lines import content_text, format_duration, summarize_args


def test_argument_summary() -> None:
    assert summarize_args({"city": "Paris", "days": 3}) == "city=Paris, days=3"
    assert summarize_args({}) == "" and summarize_args(None) == ""
    long = summarize_args({"text": "word " * 40})
    assert len(long) == 48 and long.endswith("…")
    assert summarize_args({"nested": {"a": [1, 2]}}) == 'nested={"a":[1,2]}'
    assert summarize_args({"multi": "line\n  two"}) == "multi=line two"


def test_durations_and_content() -> None:
    assert format_duration(0.0123) == "12ms"
    assert format_duration(4.25) == "4.2s"
    assert format_duration(75) == "1m15s"
    blocks = [{"type": "text", "text": "a"}, {"type": "image", "mimeType": "image/png", "data": "..."}]
    assert content_text(blocks) == "a\n[image image/png]"


def test_usage_totals_and_status_line() -> None:
    entries = [
        {"type": "session"},
        {"type": "message", "message": {"role": "user", "content": "hi"}},
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "usage": {
                    "input": 1000,
                    "output": 200,
                    "cacheRead": 500,
                    "totalTokens": 1700,
                    "cost": {"total": 0.012},
                },
            },
        },
        {"type": "model_change", "provider": "x", "modelId": "y"},
    ]
    totals = UsageTotals.from_entries(entries)
    totals.add({"input": 10, "output": 5, "cost": {"total": 0.001}})  # no totalTokens: summed
    assert (totals.input, totals.output, totals.cache_read, totals.total_tokens) == (1010, 205, 500, 1715)
    line = status_text(StatusInfo("openai/gpt-4.1", "low", "chat-1", totals, "hint!"))
    assert line.startswith("openai/gpt-4.1 · thinking low · session chat-1 · 1.7k tok (↑1.0k ↓205 cache 500)")
    assert "$0.0130" in line and line.endswith("hint!")
    unknown = status_text(StatusInfo("scripted/echo", "off", "s", UsageTotals()))
    assert "tok" not in unknown and "$" not in unknown


def test_frontmatter() -> None:
    text = '---\nname: pdf-tools\ndescription: >\n  Extract text\n  from PDFs.\nlicense: "MIT"\n---\nBody'
    assert parse_frontmatter(text) == {
        "name": "pdf-tools",
        "description": "Extract text from PDFs.",
        "license": "MIT",
    }
    assert parse_frontmatter("no frontmatter") == {}


async def test_copy_uses_osc52_and_a_clipboard_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = tmp_path / "clip.txt"
    program = tmp_path / "bin" / "xclip"
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\nexec {shutil.which('cat')} > {sink}\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(program.parent))
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    written: list[str] = []
    message = await copy_text("héllo answer", written.append)
    assert written == [osc52("héllo answer")] and written[0].startswith("\x1b]52;c;")
    assert sink.read_text(encoding="utf-8") == "héllo answer"
    assert "sent OSC 52" in message and "copied with xclip" in message

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    message = await copy_text("x", None)
    assert message.startswith("could not copy") and "no clipboard program" in message
