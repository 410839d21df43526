"""Streaming Markdown: blocks are cut without changing the Markdown, and rendered once each."""

from __future__ import annotations

import io
import random
import re

import pytest
from rich.console import Console

from fastagent_cli.chat.blocks import BlockSplitter
from fastagent_cli.chat.render import ChatRenderer
from fastagent_cli.chat.tool_lines import ToolLog
from fastagent_cli.contract import Completed, Failed, Retrying, ToolEnded, ToolStarted

DOC = """# Title
Intro para
line two.

1. one
2. two

3. three
   continued

```python
x = 1

y = 2
```
After code.
- a
- b

    indented code

| a | b |
|---|---|
| 1 | 2 |
"""


def _split(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    splitter = BlockSplitter()
    blocks: list[str] = []
    i = 0
    while i < len(text):
        n = rng.randint(1, 9)
        blocks += splitter.feed(text[i : i + n])
        i += n
    last = splitter.flush()
    return blocks + ([last] if last else [])


def test_blocks_do_not_depend_on_how_the_stream_was_chunked() -> None:
    expected = _split(DOC, 0)
    for seed in range(1, 30):
        assert _split(DOC, seed) == expected


def test_block_boundaries_keep_fences_and_lists_whole() -> None:
    blocks = _split(DOC, 3)
    assert blocks[0] == "# Title"
    assert blocks[1] == "Intro para\nline two."
    assert blocks[2] == "1. one\n2. two\n\n3. three\n   continued"  # a loose list stays one block
    assert blocks[3] == "```python\nx = 1\n\ny = 2\n```"  # the blank line inside the fence is kept
    assert blocks[4].startswith("After code.\n- a\n- b\n\n    indented code")
    assert blocks[-1].startswith("| a | b |")
    # nothing is lost: the blocks are the document minus blank separator lines
    assert "".join("".join(b.split()) for b in blocks) == "".join(DOC.split())


def test_tail_is_bounded() -> None:
    splitter = BlockSplitter()
    splitter.feed("x" * 10_000)
    tail = splitter.tail(4, 100)
    assert len(tail) == 1 and len(tail[0]) == 100 and tail[0].startswith("…")
    splitter.feed("\n" + "\n".join(f"line {i}" for i in range(50)))
    assert splitter.tail(4, 100) == ["line 46", "line 47", "line 48", "line 49"]


def _renderer(terminal: bool = True) -> tuple[ChatRenderer, io.StringIO]:
    out = io.StringIO()
    console = Console(
        file=out, width=80, force_terminal=terminal, color_system=None if not terminal else "standard"
    )
    return ChatRenderer(console, clock=lambda: 100.0), out


@pytest.mark.parametrize("terminal", [True, False])
def test_a_long_answer_is_rendered_once_not_per_token(
    terminal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    renderer, out = _renderer(terminal)
    rendered: list[int] = []
    original = renderer._print_markdown

    def counting(block: str) -> None:
        rendered.append(len(block))
        original(block)

    monkeypatch.setattr(renderer, "_print_markdown", counting)
    paragraph = "Some **bold** text and `code` in a sentence that goes on for a while. " * 4
    answer = "\n\n".join(f"{paragraph}{i}" for i in range(180)) + "\n\n```python\nprint('hi')\n```\n"
    renderer.begin_turn()
    refreshes = 0
    for i in range(0, len(answer), 7):
        renderer.text(answer[i : i + 7])
        if i % 140 == 0:
            renderer.refresh()
            refreshes += 1
    renderer.completed(Completed({}))
    renderer.end_turn()
    assert len(answer) > 50_000
    # every character is rendered once (finished blocks of a tick are joined by one blank line)
    assert sum(rendered) <= len(answer)
    assert 20 < len(rendered) <= refreshes + 1  # one render per tick at most, never one per delta
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "Some bold text" in text
    if not terminal:  # (a terminal also saw the raw open block in the live region, then erased it)
        assert "**" not in text
    assert "print('hi')" in text


def test_tool_lines_thinking_retry_and_failure() -> None:
    renderer, out = _renderer(terminal=False)
    log = ToolLog()
    renderer.begin_turn()
    renderer.thinking("Pondering the request.")
    renderer.text("Checking.")
    renderer.tool_started(log.start(ToolStarted("c1", "lookup", {"query": "x" * 100}), 100.0))
    renderer.tool_ended(log.end(ToolEnded("c1", False, [{"type": "text", "text": "found"}]), 100.25))
    renderer.tool_started(log.start(ToolStarted("c2", "broken", {}), 100.0))
    renderer.tool_ended(log.end(ToolEnded("c2", True, [{"type": "text", "text": "boom"}]), 101.5))
    renderer.retrying(Retrying(1, 3, 2000, "scripted: 503 overloaded"))
    renderer.failed(Failed("scripted: 400 bad request", False))
    renderer.end_turn()
    lines = out.getvalue().splitlines()
    assert "Pondering the request." in lines
    tool_line = next(line for line in lines if "lookup" in line)
    assert tool_line.strip().startswith("✓ lookup query=") and "250ms" in tool_line and "#1" in tool_line
    summary = tool_line.split("lookup ", 1)[1].split("  ")[0]
    assert len(summary) <= 48 and summary.endswith("…")
    assert any(line.strip().startswith("✗ broken") and "1.5s" in line and "#2" in line for line in lines)
    assert "↻ retrying (1/3) in 2.0s: scripted: 503 overloaded" in lines
    assert "✗ failed: scripted: 400 bad request" in lines


def test_hidden_thinking_is_not_printed() -> None:
    renderer, out = _renderer(terminal=False)
    renderer.show_thinking = False
    renderer.begin_turn()
    renderer.thinking("secret musings")
    renderer.text("answer")
    renderer.end_turn()
    assert "secret musings" not in out.getvalue() and "answer" in out.getvalue()


def test_live_region_shows_running_tools_and_the_open_block() -> None:
    renderer, out = _renderer(terminal=True)
    log = ToolLog()
    renderer.begin_turn()
    renderer.text("partial line being typed")
    renderer.refresh()
    assert "partial line being typed" in out.getvalue()
    renderer.tool_started(log.start(ToolStarted("c1", "fetch", {"url": "http://x"}), 99.0))
    renderer.refresh()
    assert "running" in out.getvalue() and "fetch" in out.getvalue()
    renderer.interrupted(log.interrupt_running(100.0))
    renderer.end_turn()
    assert "interrupted" in out.getvalue()


def test_open_code_fence_is_shown_as_code() -> None:
    splitter = BlockSplitter()
    splitter.feed("Intro.\n\n```python\nx = 1\ny = 2")
    assert splitter.in_fence and splitter.fence_info == "python"
    assert splitter.code_tail(6) == ["x = 1", "y = 2"]
    splitter.feed("\n" + "\n".join(f"z{i} = {i}" for i in range(20)))
    assert splitter.code_tail(3) == ["z17 = 17", "z18 = 18", "z19 = 19"]
    assert splitter.feed("\n```\n") == [
        "```python\nx = 1\ny = 2\n" + "\n".join(f"z{i} = {i}" for i in range(20)) + "\n```"
    ]
    assert not splitter.in_fence and splitter.fence_info == ""
