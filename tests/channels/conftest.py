"""Fixtures for the channel tests: a fake Bot API, a fake Agent, a mounted channel on 127.0.0.1."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fastagent_cli.contract import AgentEvent, Completed, Failed, Prompt, Scope, Text
from fastagent_cli.serving.channels import ChannelContext
from fastagent_cli.serving.host import Server, serve
from fastagent_cli.serving.router import build_router
from tests.fakes.fake_telegram import FakeTelegram

SECRET = "s3cret-token_value"
TOKEN = "123456:TEST-token"

Script = Callable[[Scope, Prompt], AsyncIterator[AgentEvent]]


@dataclass
class FakeAgent:
    """An Agent whose turns a test scripts; it records every call."""

    script: Script | None = None
    calls: list[tuple[Scope, Prompt]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def invoke(self, scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]:
        self.calls.append((scope, prompt))
        if self.script is not None:
            async for event in self.script(scope, prompt):
                yield event
            return
        yield Text(
            f"echo: {prompt.text.splitlines()[-3] if prompt.text.count(chr(10)) >= 2 else prompt.text}"
        )
        yield Completed()


def answer(text: str) -> Script:
    async def script(scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]:
        yield Text(text)
        yield Completed()

    return script


def failing(details: str, retryable: bool = False, code: str | None = None) -> Script:
    async def script(scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]:
        yield Failed(details, retryable, code)

    return script


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@dataclass
class Mounted:
    url: str
    routes: Any
    state_root: Path
    http: aiohttp.ClientSession
    server: Server

    async def post(
        self, path: str, body: bytes | dict[str, Any], headers: dict[str, str] | None = None
    ) -> tuple[int, str]:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        data = io.BytesIO(raw) if len(raw) > 1 << 20 else raw
        async with self.http.post(
            self.url + path, data=data, headers={"content-type": "application/json", **(headers or {})}
        ) as response:
            return response.status, await response.text()

    async def update(self, update: dict[str, Any], secret: str = SECRET) -> tuple[int, str]:
        return await self.post("/telegram", update, {"x-telegram-bot-api-secret-token": secret})


Mount = Callable[..., Awaitable[Mounted]]


@pytest.fixture
async def mount(tmp_path: Path) -> AsyncIterator[Mount]:
    """``mounted = await mount(channel, agent)``: the channel mounted with ``ctx`` and served."""
    opened: list[Mounted] = []

    async def make(
        channel: Any, agent: Any, *, state_root: Path | None = None, control: Any = None
    ) -> Mounted:
        root = state_root or tmp_path / "state"
        routes = channel(ChannelContext(agent, root, control))
        start = getattr(routes, "start", None)
        if start is not None:
            await start()
        server = serve(build_router(dict(routes)), port=0, host="127.0.0.1")
        port = await server.listening
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        mounted = Mounted(f"http://127.0.0.1:{port}", routes, root, http, server)
        opened.append(mounted)
        return mounted

    yield make
    for mounted in opened:
        await mounted.http.close()
        await mounted.server.close()
        close = getattr(mounted.routes, "aclose", None)
        if close is not None:
            await close()


async def idle(mounted: Mounted) -> None:
    """Wait until the mounted Telegram channel has no turn left."""
    bot = mounted.routes["/telegram"].__self__.intake
    await asyncio.wait_for(bot.queue.idle(), 30)
