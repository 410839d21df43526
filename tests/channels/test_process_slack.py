"""The Slack channel through the real ``fastagent start`` process and a fake Slack on 127.0.0.1:
signatures, url_verification, Slack's retries deduplicated, a native stream with task updates, a
long answer chunked, a thread with two humans, and ``kill -9`` mid-turn replayed exactly once."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.channels.test_process import BOT as TELEGRAM_BOT
from tests.fakes.fake_slack import FakeSlack, message
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

SECRET = "slack-signing-secret"
BOT = TELEGRAM_BOT.replace('"data " * 250', '"data " * 500')


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    (root / "channels").mkdir(parents=True)
    (root / "fastagent.toml").write_text('model = "scripted/bot:respond"\n')
    (root / "bot.py").write_text(BOT)
    (root / "channels" / "slack.py").write_text(
        "from fastagent_cli.channels import slack_channel\n\nchannel = slack_channel()\n"
    )
    (root / ".env").write_text(f"SLACK_BOT_TOKEN=xoxb-test\nSLACK_SIGNING_SECRET={SECRET}\n")
    return root


class Bot:
    def __init__(self, agent: Path, slack: FakeSlack) -> None:
        self.agent, self.slack = agent, slack
        self.log = agent.parent / "bot.log"
        self.gate = agent.parent / "gate"
        self.server: ServerProcess | None = None
        self.port = 0

    async def start(self) -> ServerProcess:
        env = {"SLACK_API_BASE_URL": self.slack.api_url, "BOT_LOG": str(self.log), "BOT_GATE": str(self.gate)}
        self.server = await ServerProcess.start(
            "start", str(self.agent), "--port", "0", "--bind", "127.0.0.1", env=env
        )
        self.port = await self.server.port()
        return self.server

    def prompts(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    async def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
            http.post(f"http://127.0.0.1:{self.port}/slack", data=body, headers=headers) as response,
        ):
            return response.status, await response.text()

    async def send(self, event: dict[str, Any], **headers: str) -> tuple[int, str]:
        body, signed = self.slack.event(event, secret=SECRET)
        return await self.post(body, {**signed, **headers})

    async def aclose(self) -> None:
        if self.server is not None:
            await self.server.aclose()


@pytest.fixture
async def bot(agent: Path) -> AsyncIterator[Bot]:
    async with FakeSlack() as slack:
        running = Bot(agent, slack)
        yield running
        await running.aclose()


async def test_signatures_retries_streams_and_a_long_answer(bot: Bot) -> None:
    server = await bot.start()
    slack = bot.slack
    body, headers = slack.event(message("hi", ts="100.1"), secret="forged")
    assert await bot.post(body, headers) == (401, "invalid signature\n")
    stale = slack.signed_headers(body, SECRET, timestamp=int(time.time()) - 600)
    assert await bot.post(body, stale) == (401, "invalid signature\n")
    challenge = json.dumps({"type": "url_verification", "challenge": "c-123", "token": "t"}).encode()
    status, text = await bot.post(challenge, slack.signed_headers(challenge, SECRET))
    assert (status, json.loads(text)) == (200, {"challenge": "c-123"})
    hello = message("hello there", ts="100.2")
    assert await bot.send(hello) == (200, "")
    assert await bot.send(hello, **{"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}) == (
        200,
        "",
    )
    answer = await slack.wait_until(
        lambda: next((m for m in slack.in_thread("D1", "100.2") if m.stopped), None), what="a stopped stream"
    )
    assert answer.kind == "stream" and "echo: hello there" in answer.text
    await server.wait_for(r"\[slack\] Slack retry 1 of event .* \(http_timeout\)")
    assert len([p for p in bot.prompts() if "hello there" in p["text"]]) == 1
    # A long answer: every streamed Markdown chunk stays under Slack's 12 000 limit.
    await bot.send(message("LONG report please", ts="100.3"))
    long = await slack.wait_until(
        lambda: next((m for m in slack.in_thread("D1", "100.3") if m.stopped), None), what="the long answer"
    )
    assert long.text.count("Section") == 6 and len(long.text) > 10_000
    chunks = [
        c
        for params in slack.methods("chat.appendStream") + slack.methods("chat.startStream")
        for c in params.get("chunks") or []
    ]
    assert chunks and all(len(c.get("text", "")) <= 10_000 for c in chunks)
    stamps = [at for at, _ in long.writes[:-1]]  # chat.startStream/appendStream; the last is stopStream
    assert all(b - a >= 0.7 for a, b in zip(stamps, stamps[1:], strict=False))


async def test_a_thread_with_two_humans_needs_a_mention_again(bot: Bot) -> None:
    await bot.start()
    slack = bot.slack
    ask = message("<@UBOT> first question", channel="C1", ts="200.1", kind="app_mention")
    assert await bot.send(ask) == (200, "")
    await slack.wait_until(
        lambda: any(m.stopped for m in slack.in_thread("C1", "200.1")), what="the first answer"
    )
    await bot.send(message("and a follow-up", channel="C1", ts="200.2", thread_ts="200.1"))
    await slack.wait_until(
        lambda: sum(m.stopped for m in slack.in_thread("C1", "200.1")) == 2, what="a bare reply answered"
    )
    await bot.send(message("I disagree", channel="C1", user="U2", ts="200.3", thread_ts="200.1"))
    await bot.send(message("bare again", channel="C1", ts="200.4", thread_ts="200.1"))
    await asyncio.sleep(1.5)
    assert sum(m.stopped for m in slack.in_thread("C1", "200.1")) == 2
    mention = message(
        "<@UBOT> what do you think?", channel="C1", ts="200.5", thread_ts="200.1", kind="app_mention"
    )
    await bot.send(mention)
    await slack.wait_until(
        lambda: sum(m.stopped for m in slack.in_thread("C1", "200.1")) == 3, what="the mention answered"
    )
    last = [p["text"] for p in bot.prompts()][-1]
    assert "user U2 (msg 200.3, thread root 200.1): I disagree" in last
    assert "user U1 (msg 200.4, thread root 200.1): bare again" in last


async def test_kill_9_mid_turn_replays_exactly_once(bot: Bot) -> None:
    first = await bot.start()
    slack = bot.slack
    await bot.send(message("BLOCK then answer", ts="300.1"))
    await slack.wait_until(lambda: bot.prompts(), what="the turn reaching the model")
    first.process.send_signal(signal.SIGKILL)
    await first.wait()
    bot.gate.write_text("go")
    second = await bot.start()
    await second.wait_for(r"\[slack\] recovering 1 unfinished turn\(s\) from a prior run")
    await slack.wait_until(
        lambda: any(m.stopped and "echo: BLOCK" in m.text for m in slack.in_thread("D1", "300.1")),
        what="the replay",
    )
    assert await bot.send(message("BLOCK then answer", ts="300.1")) == (200, "")  # a late retry: deduplicated
    await asyncio.sleep(0.5)
    runs = [p["pid"] for p in bot.prompts() if "BLOCK then answer" in p["text"]]
    assert runs == [first.process.pid, second.process.pid]
