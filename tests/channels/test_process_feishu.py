"""Feishu/Lark through the real ``fastagent start`` process and a fake Open Platform on 127.0.0.1:
the webhook's verification modes (encrypted and plain), redeliveries deduplicated, a card failing
over to text, kill -9 mid-turn replayed exactly once, a thread with two humans, a long answer split
between the card and follow-up messages, and the WebSocket long connection."""

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

from tests.channels.test_process import BOT
from tests.fakes.fake_feishu import FakeFeishu, mention_bot
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

KEY = "encrypt-key-1"


def make_agent(root: Path, channel: str, env: str) -> Path:
    (root / "channels").mkdir(parents=True)
    (root / "fastagent.toml").write_text('model = "scripted/bot:respond"\n')
    (root / "bot.py").write_text(BOT)
    (root / "channels" / "feishu.py").write_text(
        f"from fastagent_cli.channels import {channel}\n\nchannel = {channel}()\n"
    )
    (root / ".env").write_text("FEISHU_APP_ID=cli_0123456789abcdef\nFEISHU_APP_SECRET=s3cret\n" + env)
    return root


class Bot:
    def __init__(self, agent: Path, fake: FakeFeishu) -> None:
        self.agent, self.fake = agent, fake
        self.log = agent.parent / "bot.log"
        self.gate = agent.parent / "gate"
        self.server: ServerProcess | None = None
        self.port = 0

    async def start(self) -> ServerProcess:
        env = {
            "FEISHU_API_BASE_URL": self.fake.base_url,
            "BOT_LOG": str(self.log),
            "BOT_GATE": str(self.gate),
        }
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
            http.post(f"http://127.0.0.1:{self.port}/feishu", data=body, headers=headers) as response,
        ):
            return response.status, await response.text()

    async def aclose(self) -> None:
        if self.server is not None:
            await self.server.aclose()


@pytest.fixture
async def fake() -> AsyncIterator[FakeFeishu]:
    async with FakeFeishu() as running:
        yield running


async def test_encrypted_webhook_verification_dedup_and_a_card_falling_over_to_text(
    tmp_path: Path, fake: FakeFeishu
) -> None:
    bot = Bot(
        make_agent(
            tmp_path / "agent",
            "feishu_channel",
            f"FEISHU_VERIFICATION_TOKEN=vtoken\nFEISHU_ENCRYPT_KEY={KEY}\n",
        ),
        fake,
    )
    try:
        server = await bot.start()
        hello = fake.envelope("hello there")
        assert await bot.post(*fake.delivery(hello)) == (401, "plaintext events not accepted\n")
        body, headers = fake.delivery(hello, encrypt_key=KEY)
        assert await bot.post(body, {**headers, "x-lark-signature": "0" * 64}) == (401, "invalid signature\n")
        assert await bot.post(*fake.delivery(hello, encrypt_key=KEY, sign=False)) == (
            401,
            "invalid signature\n",
        )
        # Correctly signed, but an hour ago (a captured delivery replayed): outside the window.
        stale = fake.delivery(fake.envelope("replayed"), encrypt_key=KEY, signed_at=time.time() - 3600)
        assert await bot.post(*stale) == (401, "invalid signature\n")
        await server.wait_for(r"\[feishu\] rejected an event with an invalid or stale X-Lark-Signature")
        challenge = {"type": "url_verification", "challenge": "ch-1", "token": "vtoken"}
        status, text = await bot.post(*fake.delivery(challenge, encrypt_key=KEY, sign=False))
        assert (status, json.loads(text)) == (200, {"challenge": "ch-1"})
        forged = {**challenge, "token": "guessed"}
        assert await bot.post(*fake.delivery(forged, encrypt_key=KEY, sign=False)) == (401, "invalid token\n")
        assert await bot.post(*fake.delivery(hello, encrypt_key=KEY)) == (200, "")
        assert await bot.post(*fake.delivery(hello, encrypt_key=KEY)) == (
            200,
            "",
        )  # pushed again: deduplicated
        await fake.wait_until(lambda: "echo: hello there" in fake.shown("oc_p2p"), what="the settled card")
        card = next(c for c in fake.cards.values() if "echo: hello there" in c.elements.get("answer", ""))
        assert not card.streaming and card.sequences == sorted(set(card.sequences))
        await server.wait_for(r"\[feishu\] group visibility: context-aware")
        # The card cannot be created: a static text placeholder, edited once into the answer.
        fake.fail("createCard", 230099, "cardid is invalid")
        await bot.post(*fake.delivery(fake.envelope("plain please", chat_id="oc_two"), encrypt_key=KEY))
        await fake.wait_until(lambda: "echo: plain please" in fake.shown("oc_two"), what="the text fallback")
        texts = [m for m in fake.messages if m.chat_id == "oc_two"]
        assert [m.msg_type for m in texts] == ["text"] and texts[0].edits
        await server.wait_for(r"\[feishu\] streaming card unavailable, the preview is a static text message")
        assert len([p for p in bot.prompts() if "hello there" in p["text"]]) == 1
        assert not [p for p in bot.prompts() if "replayed" in p["text"]]
    finally:
        await bot.aclose()


async def test_plain_webhook_threads_and_kill_9_replayed_once(tmp_path: Path, fake: FakeFeishu) -> None:
    bot = Bot(make_agent(tmp_path / "agent", "feishu_channel", "FEISHU_VERIFICATION_TOKEN=vtoken\n"), fake)
    try:
        first = await bot.start()
        encrypted = fake.delivery(fake.envelope("x"), encrypt_key=KEY)
        assert await bot.post(*encrypted) == (400, "encrypt key not configured\n")
        wrong = fake.envelope("x")
        wrong["header"]["token"] = "nope"
        assert await bot.post(*fake.delivery(wrong)) == (401, "invalid token\n")
        # A group: chatter is context; an @mention opens a thread the agent owns.
        await bot.post(*fake.delivery(fake.envelope("lunch at noon?", chat_id="oc_g", chat_type="group")))
        ask = fake.envelope(
            "@_user_1 what was proposed?",
            chat_id="oc_g",
            chat_type="group",
            mentions=mention_bot(),
            message_id="om_root",
        )
        await bot.post(*fake.delivery(ask))
        await fake.wait_until(lambda: any("echo:" in s for s in fake.shown("oc_g")), what="the group answer")
        reply = next(m for m in fake.messages if m.chat_id == "oc_g")
        assert reply.reply_to == "om_root" and reply.thread_id == "omt_om_root"
        group_prompt = [p["text"] for p in bot.prompts() if "oc_g" in p["text"]][0]
        assert "user ou_alice (msg " in group_prompt and "lunch at noon?" in group_prompt
        # kill -9 mid-turn: the intent replays once on the next start.
        await bot.post(*fake.delivery(fake.envelope("BLOCK then answer", message_id="om_block")))
        await fake.wait_until(
            lambda: any("BLOCK" in p["text"] for p in bot.prompts()), what="the blocked turn"
        )
        first.process.send_signal(signal.SIGKILL)
        await first.wait()
        bot.gate.write_text("go")
        second = await bot.start()
        await second.wait_for(r"\[feishu\] recovering 1 unfinished turn\(s\) from a prior run")
        await fake.wait_until(lambda: "echo: BLOCK then answer" in fake.shown("oc_p2p"), what="the replay")
        assert await bot.post(*fake.delivery(fake.envelope("BLOCK then answer", message_id="om_block"))) == (
            200,
            "",
        )
        await asyncio.sleep(0.5)
        assert [p["pid"] for p in bot.prompts() if "BLOCK" in p["text"]] == [
            first.process.pid,
            second.process.pid,
        ]
    finally:
        await bot.aclose()


async def test_the_websocket_long_connection(tmp_path: Path, fake: FakeFeishu) -> None:
    bot = Bot(make_agent(tmp_path / "agent", "feishu_websocket_channel", ""), fake)
    try:
        server = await bot.start()
        await server.wait_for(r"\[feishu:ws\] connected")
        event = fake.envelope("over the socket", message_id="om_ws1")
        frame = await fake.push(event)
        await fake.wait_until(lambda: any(a["message_id"] == frame for a in fake.acks), what="the ack frame")
        assert next(a for a in fake.acks if a["message_id"] == frame)["code"] == 200
        await fake.wait_until(lambda: "echo: over the socket" in fake.shown("oc_p2p"), what="the answer")
        await fake.push(event)  # pushed again: deduplicated
        split = await fake.push(fake.envelope("in two parts", message_id="om_ws2"), parts=2)
        await fake.wait_until(
            lambda: any(a["message_id"] == split for a in fake.acks), what="the split event's ack"
        )
        await fake.wait_until(lambda: "echo: in two parts" in fake.shown("oc_p2p"), what="the split answer")
        assert len([p for p in bot.prompts() if "over the socket" in p["text"]]) == 1
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{bot.port}/health") as response,
        ):
            assert response.status == 200
    finally:
        await bot.aclose()


async def test_a_thread_with_two_humans_and_a_long_answer(tmp_path: Path, fake: FakeFeishu) -> None:
    agent = make_agent(tmp_path / "agent", "feishu_channel", "FEISHU_VERIFICATION_TOKEN=vtoken\n")
    (agent / "bot.py").write_text(BOT.replace('"data " * 250', '"data " * 800'))  # 6 x 4 000 chars
    bot = Bot(agent, fake)

    def answered(text: str) -> bool:
        return any(text in shown for shown in fake.shown("oc_g"))

    def asked(text: str) -> int:
        return sum(1 for p in bot.prompts() if text in p["text"])

    def in_thread(text: str, sender: str = "ou_alice", **extra: Any) -> dict[str, Any]:
        return fake.envelope(
            text,
            chat_id="oc_g",
            chat_type="group",
            sender=sender,
            root_id="om_root",
            thread_id="omt_om_root",
            **extra,
        )

    try:
        await bot.start()
        ask = fake.envelope(
            "@_user_1 first question",
            chat_id="oc_g",
            chat_type="group",
            mentions=mention_bot(),
            message_id="om_root",
        )
        await bot.post(*fake.delivery(ask))
        await fake.wait_until(lambda: answered("first question"), what="the first answer")
        # One person talking to the agent in its thread: a bare reply is answered.
        await bot.post(*fake.delivery(in_thread("and a follow-up")))
        await fake.wait_until(lambda: answered("echo: and a follow-up"), what="a bare reply answered")
        # A second person joins: bare replies are discussion now, until someone mentions the bot.
        await bot.post(*fake.delivery(in_thread("I disagree", sender="ou_bob")))
        await bot.post(*fake.delivery(in_thread("bare again")))
        await asyncio.sleep(1.5)
        assert asked("I disagree") == 0 and asked("bare again") == 0
        mention = in_thread("@_user_1 what do you think?", mentions=mention_bot())
        await bot.post(*fake.delivery(mention))
        await fake.wait_until(lambda: answered("what do you think?"), what="the mention answered")
        assert asked("what do you think?") == 1
        last = [p["text"] for p in bot.prompts() if "what do you think?" in p["text"]][0]
        assert "user ou_bob (msg " in last and "I disagree" in last and "bare again" in last
        threaded = [m for m in fake.messages if m.chat_id == "oc_g"]
        assert len(threaded) == 3 and threaded[0].reply_to == "om_root" and all(m.reply_to for m in threaded)
        # A long answer: the card holds the first 20 KB of Markdown, the rest follows as messages.
        await bot.post(*fake.delivery(fake.envelope("LONG report please", chat_id="oc_long")))
        await fake.wait_until(
            lambda: any("Section 5" in s for s in fake.shown("oc_long")), what="the end of the long answer"
        )
        shown = fake.shown("oc_long")
        assert len(shown) >= 2 and fake.messages[-len(shown)].msg_type == "interactive"
        assert all(len(part.encode()) <= 20 * 1024 for part in shown)
        whole = "".join(shown)
        assert [whole.count(f"Section {i}") for i in range(6)] == [1] * 6 and whole.count("data") == 4_800
    finally:
        await bot.aclose()
