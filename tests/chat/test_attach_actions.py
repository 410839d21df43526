"""What a line typed in attach becomes, on fake clients: a message with what ``/attach`` added
goes as the contract's images with a new run's invoke (``POST /control/invoke``'s ``images``) or
with a steer of the run shown; a picker is refused while a run streams."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from PIL import Image
from rich.console import Console

from fastagent_cli.chat.attach.actions import AttachActions
from fastagent_cli.chat.attach.ops import RemoteOps
from fastagent_cli.chat.render import ChatRenderer
from fastagent_cli.chat.terminal_ui import TerminalUI
from fastagent_cli.contract import Completed, Prompt, Scope
from fastagent_cli.control import ActionResult, accepted


class FakeAgent:
    def __init__(self) -> None:
        self.prompts: list[Prompt] = []

    async def invoke(self, scope: Scope, prompt: Prompt) -> AsyncIterator[Any]:
        self.prompts.append(prompt)
        yield Completed({})


class FakeSession:
    def __init__(self) -> None:
        self.steers: list[Prompt] = []

    async def steer(self, prompt: Prompt) -> ActionResult:
        self.steers.append(prompt)
        return accepted("r1")


class FakeControl:
    def __init__(self) -> None:
        self.session = FakeSession()
        self.sessions = self

    def get(self, session: str) -> FakeSession:
        return self.session


class FakeLink:
    def __init__(self) -> None:
        self.agent = FakeAgent()
        self.control = FakeControl()


class Host:
    def __init__(self) -> None:
        self.link = FakeLink()
        self.session = "s1"
        self.ops = RemoteOps("s1", lambda: self.link.control, lambda: None)  # type: ignore[arg-type,return-value]
        self.run_shown = False

    @contextlib.asynccontextmanager
    async def printing(self) -> AsyncIterator[None]:
        yield

    def request_detach(self) -> None: ...


def _actions() -> tuple[AttachActions, Host, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None)
    renderer = ChatRenderer(console)
    host = Host()
    ui = TerminalUI(console, renderer, None, None)  # type: ignore[arg-type]
    return AttachActions(host, ui, renderer.note), host, out  # type: ignore[arg-type]


async def _settle(actions: AttachActions) -> None:
    while pending := [t for t in (*actions.tasks, *actions.own_runs) if not t.done()]:
        await asyncio.gather(*pending)


async def test_attached_files_go_with_the_next_run_and_the_next_steer(tmp_path: Path) -> None:
    photo = tmp_path / "photo.png"
    Image.new("RGB", (8, 8), "red").save(photo)
    actions, host, out = _actions()
    actions.line(f"/attach {photo}", "line")
    await _settle(actions)
    assert "attached photo.png" in out.getvalue()
    actions.line("what is this?", "line")
    await _settle(actions)
    (prompt,) = host.link.agent.prompts
    assert prompt.text == "what is this?" and [i.mime_type for i in prompt.images] == ["image/png"]
    host.run_shown = True
    actions.line(f"/attach {photo}", "steer")
    await _settle(actions)
    actions.line("and this one", "steer")
    await _settle(actions)
    (steer,) = host.link.control.session.steers
    assert steer.text == "and this one" and len(steer.images) == 1
    assert not host.ops.attachments.items  # sent once


async def test_a_picker_is_refused_while_a_run_streams() -> None:
    actions, host, out = _actions()
    host.run_shown = True
    actions.line("/model", "steer")
    await _settle(actions)
    assert "✗ no picker while a run streams: /model [spec]" in out.getvalue()
