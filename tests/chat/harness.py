"""Driving the real chat app through prompt-toolkit's pipe input, on the scripted model.

The app runs as a task in the test's event loop; keys go in through ``create_pipe_input()``, the
prompt renders to ``DummyOutput`` and turns render to a rich console on a StringIO, so tests read
what a user would have seen (without colours).
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prompt_toolkit.input import PipeInput
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from fastagent_cli.assembly import OpenedAgent, open_agent_dir
from fastagent_cli.chat.app import SessionApp
from fastagent_cli.chat.chat_side import ChatSide
from fastagent_cli.chat.controller import ChatController
from fastagent_cli.tools.base import Tool
from fastagent_cli.tools.define import tool

ANSWER = "It is **sunny** in Paris."
SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": "weather",
            "steps": [
                {"text": "Let me look.", "toolCalls": [{"name": "get_weather", "args": {"city": "Paris"}}]},
                {"text": ANSWER, "usage": {"input": 120, "output": 30}},
            ],
        },
        {
            "match": "slow",
            "steps": [{"toolCalls": [{"name": "slow_tool", "args": {"seconds": 30}}]}, {"text": "slow done"}],
        },
        {"steps": [{"text": "Hello from the script.", "usage": {"input": 50, "output": 5}}]},
    ]
}


class ToolProbe:
    """Tools whose progress a test can wait on."""

    def __init__(self, weather_delay: float = 0.0) -> None:
        self.weather_delay = weather_delay
        self.slow_started = asyncio.Event()
        self.slow_cancelled = asyncio.Event()
        self.weather_started = asyncio.Event()

    def tools(self) -> list[Tool]:
        probe = self

        @tool
        async def get_weather(city: str) -> str:
            """Current weather for a city."""
            probe.weather_started.set()
            await asyncio.sleep(probe.weather_delay)
            return f"{city}: 21C and sunny"

        @tool
        async def slow_tool(seconds: float) -> str:
            """Takes its time."""
            probe.slow_started.set()
            try:
                await asyncio.sleep(seconds)
            except asyncio.CancelledError:
                probe.slow_cancelled.set()
                raise
            return "finally"

        return [get_weather, slow_tool]


def write_agent(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "fastagent.toml").write_text('model = "scripted/chat"\ncoding_tools = false\n', encoding="utf-8")
    (root / "scripts").mkdir(exist_ok=True)
    (root / "scripts" / "chat.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


class ChatHarness:
    def __init__(
        self, agent_dir: Path, inp: PipeInput, *, probe: ToolProbe | None = None, session: str | None = None
    ) -> None:
        self.probe = probe or ToolProbe()
        self.opened: OpenedAgent = open_agent_dir(agent_dir, tools=self.probe.tools())
        self.buffer = io.StringIO()
        console = Console(file=self.buffer, width=100, force_terminal=False, color_system=None)
        self.ctl = ChatController(self.opened, session)
        self.inp = inp
        self.app = SessionApp(
            ChatSide(self.ctl),
            console=console,
            input=inp,
            output=DummyOutput(),
            history_path=self.opened.state_root / "chat_history",
        )
        self.task: asyncio.Task[int] | None = None

    @property
    def output(self) -> str:
        return self.buffer.getvalue()

    async def start(self) -> None:
        self.task = asyncio.create_task(self.app.run())
        await self.wait(lambda: self.app.prompts_shown >= 1, "the first prompt")

    async def wait(self, condition: Callable[[], bool], what: str, within: float = 20.0) -> None:
        deadline = time.monotonic() + within
        while not condition():
            if self.task is not None and self.task.done():
                self.task.result()  # surface a crash
                raise AssertionError(f"the chat ended while waiting for {what}\n{self.output}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; output so far:\n{self.output}")
            await asyncio.sleep(0.01)

    async def wait_text(self, text: str, within: float = 20.0) -> None:
        await self.wait(lambda: text in self.output, repr(text), within)

    def send(self, keys: str) -> None:
        self.inp.send_text(keys)

    async def submit(self, line: str) -> str:
        """Type ``line`` + Enter and wait for the next prompt; return what was printed meanwhile."""
        before = self.app.prompts_shown
        mark = len(self.output)
        self.send(line + "\r")
        await self.wait(lambda: self.app.prompts_shown > before, f"the prompt after {line!r}")
        return self.output[mark:]

    async def finish(self, within: float = 20.0) -> int:
        assert self.task is not None
        try:
            return await asyncio.wait_for(self.task, within)
        finally:
            await self.opened.agent.aclose()

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        await self.opened.agent.aclose()


def session_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a session file, each of which must be whole JSON."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
