"""The one webhook preamble (``serving/body.py``) as the channels answer it: 405 names ``Allow: POST``,
a 413 closes the connection (as ``/invoke`` and ``/control`` do), a body that is not a JSON object is a
400, even when it nests too deep to parse."""

from __future__ import annotations

import io
import json
from typing import Any

from fastagent_cli.channels import github_channel, telegram_channel
from fastagent_cli.channels.github import sign_payload
from tests.channels.conftest import SECRET, TOKEN, FakeAgent, Mount
from tests.fakes.fake_telegram import FakeTelegram

GH_SECRET = "gh-preamble"


async def _send(bot: Any, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str, Any]:
    data = io.BytesIO(body) if len(body) > 1 << 20 else body
    async with bot.http.post(bot.url + path, data=data, headers=headers) as response:
        return response.status, await response.text(), response.headers


async def test_telegram_405_413_and_400_answer_one_way(telegram: FakeTelegram, mount: Mount) -> None:
    channel = telegram_channel(secret_token=SECRET, bot_token=TOKEN, api_base_url=telegram.base_url)
    bot = await mount(channel, FakeAgent())
    async with bot.http.get(bot.url + "/telegram") as response:
        assert (response.status, await response.text()) == (405, "POST only\n")
        assert response.headers["Allow"] == "POST"
    headers = {"x-telegram-bot-api-secret-token": SECRET, "content-type": "application/json"}
    status, text, answered = await _send(bot, "/telegram", b"{" + b" " * (1 << 20) + b"}", headers)
    assert (status, text) == (413, "payload too large\n")
    assert answered.get("Connection", "").lower() == "close"
    deep = b"[" * 100_000 + b"]" * 100_000
    assert (await _send(bot, "/telegram", deep, headers))[:2] == (400, "invalid json\n")


async def test_github_413_closes_the_connection_too(mount: Mount) -> None:
    bot = await mount(github_channel(on=lambda event: [], secret=GH_SECRET), FakeAgent())
    big = b"{" + b" " * (25 << 20) + b"}"
    headers = {"x-github-event": "issues", "x-hub-signature-256": sign_payload(GH_SECRET, big)}
    status, text, answered = await _send(bot, "/webhook", big, headers)
    assert (status, text) == (413, "payload too large\n")
    assert answered.get("Connection", "").lower() == "close"
    nested = json.dumps({"a": 1}).encode()
    signed = {"x-github-event": "issues", "x-hub-signature-256": sign_payload(GH_SECRET, nested)}
    assert (await _send(bot, "/webhook", nested, signed))[:2] == (202, "")
