"""The channels through the real ``fastagent start`` process: a fake Telegram Bot API and a GitHub
webhook sender on 127.0.0.1, signed and badly signed deliveries, a group, a long answer, a 429,
``kill -9`` mid-turn and the replay, duplicate deliveries."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fastagent_cli.channels.github import sign_payload
from tests.fakes.fake_telegram import FakeTelegram, Updates, mention
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

SECRET = "tg-secret_123"
TOKEN = "424242:PROCESS"
GH_SECRET = "gh-secret"
GROUP = -100777

BOT = """
import asyncio, json, os, pathlib

def _body(text):
    lines = [l for l in text.splitlines() if l.strip() and not l.startswith(("[", "(", "]"))]
    return lines[-1] if lines else ""

async def respond(request):
    text = request.last_user_text
    with open(os.environ["BOT_LOG"], "a") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "text": text}) + "\\n")
    body = _body(text)
    if "BLOCK" in body:
        gate = pathlib.Path(os.environ["BOT_GATE"])
        while not gate.exists():
            await asyncio.sleep(0.05)
    if "LONG" in body:
        return "\\n\\n".join(f"<b>Section {i}</b> " + "data " * 250 for i in range(6))
    return f"echo: {body}"
"""

GITHUB = """
from fastagent_cli.channels import Intent, github_channel

def on(event):
    if event.event == "issues":
        issue = event.payload["issue"]
        return [Intent(session=f"issue-{issue['number']}", text=f"Triage: {issue['title']}")]
    return []

channel = github_channel(on=on)
"""


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    root = tmp_path / "agent"
    (root / "channels").mkdir(parents=True)
    (root / "fastagent.toml").write_text('model = "scripted/bot:respond"\n')
    (root / "bot.py").write_text(BOT)
    (root / "channels" / "telegram.py").write_text(
        "from fastagent_cli.channels import telegram_channel\n\nchannel = telegram_channel()\n"
    )
    (root / "channels" / "github.py").write_text(GITHUB)
    (root / ".env").write_text(
        f"TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_SECRET_TOKEN={SECRET}\nGITHUB_WEBHOOK_SECRET={GH_SECRET}\n"
    )
    return root


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


class Bot:
    def __init__(self, agent: Path, telegram: FakeTelegram) -> None:
        self.agent = agent
        self.telegram = telegram
        self.log = agent.parent / "bot.log"
        self.gate = agent.parent / "gate"
        self.server: ServerProcess | None = None
        self.port = 0

    async def start(self) -> ServerProcess:
        env = {
            "TELEGRAM_API_BASE_URL": self.telegram.base_url,
            "BOT_LOG": str(self.log),
            "BOT_GATE": str(self.gate),
        }
        self.server = await ServerProcess.start(
            "start", str(self.agent), "--port", "0", "--bind", "127.0.0.1", env=env
        )
        self.port = await self.server.port()
        return self.server

    def prompts(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
            http.post(f"http://127.0.0.1:{self.port}{path}", data=body, headers=headers) as response,
        ):
            return response.status, await response.text()

    async def update(self, update: dict[str, Any], secret: str = SECRET) -> tuple[int, str]:
        headers = {"content-type": "application/json", "x-telegram-bot-api-secret-token": secret}
        return await self.post("/telegram", json.dumps(update).encode(), headers)

    async def github(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        secret: str = GH_SECRET,
        delivery: str = "7c0a0f80-0000-4000-8000-000000000001",
    ) -> tuple[int, str]:
        body = json.dumps(payload).encode()
        headers = {
            "content-type": "application/json",
            "x-github-event": event,
            "x-github-delivery": delivery,
            "x-hub-signature-256": sign_payload(secret, body),
        }
        return await self.post("/webhook", body, headers)

    async def aclose(self) -> None:
        if self.server is not None:
            await self.server.aclose()


@pytest.fixture
async def bot(agent: Path, telegram: FakeTelegram) -> AsyncIterator[Bot]:
    running = Bot(agent, telegram)
    yield running
    await running.aclose()


async def test_telegram_private_group_long_answers_and_a_429(bot: Bot, telegram: FakeTelegram) -> None:
    server = await bot.start()
    updates = Updates()
    hello = updates.message("hello there")
    assert await bot.update(hello, secret="forged") == (401, "invalid secret token\n")
    assert await bot.update(hello) == (200, "")
    assert await bot.update(hello) == (200, "")  # Telegram delivering again: ignored
    await telegram.wait_for_text(42, "echo: hello there")
    # A group: bystander talk is context, a mention of someone else is not a summons.
    await bot.update(updates.message("lunch at noon?", chat_id=GROUP, chat_type="supergroup"))
    other = "@carol are you in?"
    await bot.update(
        updates.message(other, chat_id=GROUP, chat_type="supergroup", entities=mention(other, "carol"))
    )
    ask = "@fa_test_bot what was proposed?"
    summon = updates.message(ask, chat_id=GROUP, chat_type="supergroup", entities=mention(ask, "fa_test_bot"))
    await bot.update(summon)
    answer = await telegram.wait_for_text(GROUP, "echo: @fa_test_bot what was proposed?")
    assert answer.reply_to == summon["message"]["message_id"]
    group_prompts = [p["text"] for p in bot.prompts() if str(GROUP) in p["text"]]
    assert len(group_prompts) == 1
    assert (
        "[recent group discussion:\n@alice (msg 2): lunch at noon?\n@alice (msg 3): @carol are you in?\n]"
        in (group_prompts[0])
    )
    # A long answer: the placeholder goes, the answer arrives as consecutive messages.
    await bot.update(updates.message("LONG report please", chat_id=43))
    await telegram.wait_until(lambda: len(telegram.shown(43)) >= 2, what="a split answer")
    parts = telegram.shown(43)
    assert all(len(p) <= 4096 for p in parts) and parts[0].startswith("Section 0")
    assert [m.deleted for m in telegram.of_chat(43)][0] is True
    # A 429 on the placeholder: the channel waits retry_after and carries on.
    telegram.fail("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
    await bot.update(updates.message("after the flood", chat_id=44))
    await telegram.wait_for_text(44, "echo: after the flood")
    assert server.count(r"\[telegram\] sendMessage: 429 Too Many Requests; retrying in 1 s \(1/3\)") == 1
    assert len([p for p in bot.prompts() if "hello there" in p["text"]]) == 1
    assert server.count(r"\[telegram\] turn done: turn=\d+ session=42 ") == 1


async def test_github_deliveries_signed_and_badly_signed(bot: Bot) -> None:
    server = await bot.start()
    issue = {"action": "opened", "issue": {"number": 12, "title": "Crash on save"}}
    assert await bot.github("issues", issue, secret="guessed") == (401, "invalid signature\n")
    assert await bot.github("ping", {"zen": "Keep it simple."}) == (204, "")
    assert await bot.github("issues", issue) == (202, "")
    assert await bot.github("star", {"action": "created"}) == (202, "")
    await server.wait_for(
        r"\[github\] turn done: turn=7c0a0f80-0000-4000-8000-000000000001#0 session=issue-12 \("
    )
    assert server.count(r"\[github\] turn start: .* event=issues\.opened") == 1
    assert [p["text"] for p in bot.prompts()] == ["Triage: Crash on save"]


async def test_github_deliveries_to_a_busy_session_wait_their_turn(bot: Bot) -> None:
    server = await bot.start()
    first = {"action": "opened", "issue": {"number": 12, "title": "BLOCK first"}}
    second = {"action": "edited", "issue": {"number": 12, "title": "second"}}
    assert await bot.github("issues", first, delivery="d-first") == (202, "")
    await server.wait_for(r"\[github\] turn start: turn=d-first#0 session=issue-12 ")
    assert await bot.github("issues", second, delivery="d-second") == (202, "")
    await server.wait_for(r"\[github\] turn queued: turn=d-second#0 session=issue-12 ")
    bot.gate.touch()
    await server.wait_for(r"\[github\] turn done: turn=d-second#0 session=issue-12 \(")
    assert server.count(r"\[github\] turn done: turn=d-first#0 session=issue-12 \(") == 1
    assert "turn failed" not in server.text and "session_busy" not in server.text
    assert [p["text"] for p in bot.prompts()] == ["Triage: BLOCK first", "Triage: second"]


async def test_kill_9_mid_turn_then_a_restart_replays_the_turn_exactly_once(
    bot: Bot, telegram: FakeTelegram
) -> None:
    first = await bot.start()
    updates = Updates()
    blocked = updates.message("BLOCK then answer")
    assert await bot.update(blocked) == (200, "")
    await telegram.wait_for_text(42, "Thinking")
    await telegram.wait_until(lambda: bot.prompts(), what="the turn reaching the model")
    journal = bot.agent / ".fastagent" / "channels" / "telegram" / "turns.jsonl"
    await telegram.wait_until(lambda: '"preview"' in journal.read_text(), what="the preview id on disk")
    first.process.send_signal(signal.SIGKILL)
    await first.wait()
    assert f'"id":"{blocked["update_id"]}"' in journal.read_text().replace(" ", "")

    bot.gate.write_text("go")
    second = await bot.start()
    await second.wait_for(r"\[telegram\] recovering 1 unfinished turn\(s\) from a prior run")
    await telegram.wait_for_text(42, "echo: BLOCK then answer")
    await second.wait_for(r"\[telegram\] turn done: turn=\d+ session=42 ")
    assert await bot.update(blocked) == (200, "")  # Telegram redelivering it later: ignored
    await asyncio.sleep(0.5)
    runs = [p["pid"] for p in bot.prompts() if "BLOCK then answer" in p["text"]]
    assert runs == [first.process.pid, second.process.pid]  # interrupted once, replayed once
    assert telegram.shown(42) == ["echo: BLOCK then answer"], (
        second.text
    )  # the replay took the old placeholder over
    await bot.aclose()

    third = await bot.start()  # nothing left to replay
    await asyncio.sleep(1.0)
    assert third.count("recovering") == 0
    assert len(bot.prompts()) == 2


async def test_a_broken_channel_state_file_is_a_warning_not_a_crash(bot: Bot, telegram: FakeTelegram) -> None:
    home = bot.agent / ".fastagent" / "channels" / "telegram"
    home.mkdir(parents=True)
    (home / "turns.json").write_text("{truncated")
    (home / "buffers.json").write_text(json.dumps({"generation": 0, "data": ["wrong", "shape"]}))
    server = await bot.start()
    await server.wait_for(
        r"WARN  \[telegram\] .*turns\.json is not valid JSON .* starting without what it held"
    )
    await server.wait_for(r"WARN  \[telegram\] .*buffers\.json has an unexpected shape")
    await bot.update(Updates().message("still works"))
    await telegram.wait_for_text(42, "echo: still works")
    assert os.path.exists(home / "turns.json")


async def test_stop_aborts_the_running_turn_and_the_queued_one_still_runs(
    bot: Bot, telegram: FakeTelegram
) -> None:
    server = await bot.start()
    updates = Updates()
    await bot.update(updates.message("BLOCK forever"))
    await telegram.wait_until(lambda: bot.prompts(), what="the turn reaching the model")
    await bot.update(updates.message("and then this"))
    await telegram.wait_for_text(42, "Queued")
    assert await bot.update(updates.message("/stop")) == (200, "")
    await telegram.wait_for_text(42, "⏹ Stopped.")
    await telegram.wait_for_text(42, "echo: and then this")
    await server.wait_for(r"\[telegram\] turn stopped: turn=\d+ session=42 ")
    # The stopped turn's placeholder is gone; the queued notice (sent before /stop) became the answer.
    assert telegram.shown(42) == ["echo: and then this", "⏹ Stopped."]
    assert [p["text"].count("/stop") for p in bot.prompts()] == [0, 0]  # the command never became a turn
