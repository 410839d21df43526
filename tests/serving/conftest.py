"""Fixtures for the serving tests: a real host on 127.0.0.1, an HTTP client, fake and real agents."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import AgentEvent, Prompt, Scope, event_from_wire
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.serving.host import Server, serve
from fastagent_cli.serving.router import Handler
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.tools.define import tool

StartServer = Callable[[Handler], Awaitable[str]]


@pytest.fixture
async def start_server() -> AsyncIterator[StartServer]:
    """``base_url = await start_server(handler)``: the real host on an ephemeral 127.0.0.1 port."""
    servers: list[Server] = []

    async def start(handler: Handler) -> str:
        server = serve(handler, port=0, host="127.0.0.1")
        servers.append(server)
        port = await server.listening
        return f"http://127.0.0.1:{port}"

    yield start
    for server in servers:
        await server.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        yield session


def sse_events(body: str) -> list[AgentEvent]:
    """Parse an SSE body the way the spec says: only ``data:`` lines carry events."""
    events: list[AgentEvent] = []
    for message in body.split("\n\n"):
        for line in message.split("\n"):
            if line.startswith("data: "):
                events.append(event_from_wire(line[len("data: ") :]))
    return events


async def raw_http(port: int, request: bytes, *, read_timeout: float = 10) -> bytes:
    """Send raw bytes (exact request target, no client-side URL normalisation) and read the whole
    answer (the request should say ``Connection: close``)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), read_timeout)
    finally:
        writer.close()
        await writer.wait_closed()


def raw_get(path: str, method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()


def split_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


@dataclass
class FakeAgent:
    """An Agent that yields scripted events; a float in the script sleeps that many seconds.

    Records every scope and prompt, whether each stream was closed early (``cancelled``) and
    whether it was closed at all (``closed``)."""

    script: Sequence[AgentEvent | float | BaseException] = ()
    calls: list[tuple[Scope, Prompt]] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    def invoke(self, scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]:
        self.calls.append((scope, prompt))
        return self._run()

    async def _run(self) -> AsyncIterator[AgentEvent]:
        self.started.set()
        try:
            for item in self.script:
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, float):
                    await asyncio.sleep(item)
                else:
                    yield item
        except (asyncio.CancelledError, GeneratorExit):
            self.cancelled.set()
            raise
        finally:
            self.closed.set()


@dataclass
class SlowTool:
    """A tool that sleeps until cancelled, recording that it started and that it was cancelled."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    seconds: float = 60.0

    def build(self) -> Any:
        @tool
        async def slow(label: str = "x") -> str:
            """Take a long time."""
            self.started.set()
            try:
                await asyncio.sleep(self.seconds)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            return f"slow {label} done"

        return slow


def slow_tool_script() -> ScriptedModel:
    """Calls ``slow`` on messages containing "slow"; answers ``ok: <text>`` otherwise."""
    return ScriptedModel.from_script(
        {
            "rules": [
                {
                    "match": "slow",
                    "steps": [{"toolCalls": [{"name": "slow", "args": {}}]}, {"text": "finished"}],
                },
                {"steps": [{"text": "ok"}]},
            ]
        }
    )


def real_agent(tmp_path: Path, model: ScriptedModel, tools: Sequence[Any] = ()) -> EngineAgent:
    return create_agent(
        model=model, tools=tools, sessions=FileSessionStore(tmp_path / "sessions", tmp_path), cwd=tmp_path
    )


def session_lines(tmp_path: Path, agent: EngineAgent, session: str) -> list[dict[str, Any]]:
    store = agent.config.sessions
    assert isinstance(store, FileSessionStore)
    path = store.location(session)
    assert path is not None
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]
