"""Telegram on two real ``fastagent start`` instances sharing one real PostgreSQL: a delivery
accepted by one instance that is then killed (``kill -9`` mid-turn) is taken over and replayed by
the other exactly once, and Telegram redelivering it to the survivor is ignored (the seen ring and
the turn intents are shared)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import aiohttp
import pytest

from tests.channels.test_process import BOT, SECRET, TOKEN
from tests.fakes.fake_telegram import FakeTelegram, Updates
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow


async def deliver(port: int, update: dict[str, object]) -> tuple[int, str]:
    headers = {"content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET}
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.post(f"http://127.0.0.1:{port}/telegram", data=json.dumps(update), headers=headers) as resp,
    ):
        return resp.status, await resp.text()


@pytest.mark.timeout(120)
async def test_a_delivery_of_a_killed_instance_is_replayed_once_by_another(
    tmp_path: Path, database_url: str
) -> None:
    agent = tmp_path / "agent"
    (agent / "channels").mkdir(parents=True)
    (agent / "fastagent.toml").write_text('model = "scripted/bot:respond"\nstate_backend = "postgres"\n')
    (agent / "bot.py").write_text(BOT)
    (agent / "channels" / "telegram.py").write_text(
        "from fastagent_cli.channels import telegram_channel\n\nchannel = telegram_channel()\n"
    )
    (agent / ".env").write_text(f"TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_SECRET_TOKEN={SECRET}\n")
    log, gate = tmp_path / "bot.log", tmp_path / "gate"

    def prompts() -> list[dict[str, object]]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    async with FakeTelegram() as telegram:

        def env(name: str) -> dict[str, str]:
            return {
                "TELEGRAM_API_BASE_URL": telegram.base_url,
                "BOT_LOG": str(log),
                "BOT_GATE": str(gate),
                "FASTAGENT_DATABASE_URL": database_url,
                "FASTAGENT_STATE_DIR": str(tmp_path / f"state-{name}"),
            }

        async with (
            ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1", env=env("a")) as a,
            ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1", env=env("b")) as b,
        ):
            pa, pb = await a.port(), await b.port()
            blocked = Updates().message("BLOCK then answer")
            assert await deliver(pa, blocked) == (200, "")
            await telegram.wait_for_text(42, "Thinking")
            await telegram.wait_until(prompts, what="the turn reaching the model")
            a.send(signal.SIGKILL)
            await a.wait()
            gate.write_text("go")
            await b.wait_for(r"\[telegram\] taking over turn \d+ \(session=42\) from a stopped instance")
            await telegram.wait_for_text(42, "echo: BLOCK then answer")
            await b.wait_for(r"\[telegram\] turn done: turn=\d+ session=42 ")
            assert await deliver(pb, blocked) == (200, "")  # Telegram redelivering it: ignored
            await asyncio.sleep(1.0)
            runs = [p["pid"] for p in prompts() if "BLOCK then answer" in str(p["text"])]
            assert runs == [a.process.pid, b.process.pid]  # interrupted once, replayed once
            assert telegram.shown(42) == ["echo: BLOCK then answer"], b.text
            assert b.count(r"taking over turn") == 1
