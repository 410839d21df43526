"""Telegram approvals through the real ``fastagent start`` against the fake Bot API: the request
arrives with an inline keyboard, a press by a group member who did not ask is refused with an
alert (nothing changes), the asker's press approves (the message says who), a deny resumes the
turn with the denial, a forged callback (wrong secret token) is refused, and a press after a
SIGKILL and a restart of ``start`` resumes the turn without asking again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.channels.approvals_agent import TWO_CALLS, asked_then_killed, start_args, write_agent
from tests.fakes.fake_telegram import FakeTelegram, Message, Updates, mention
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

SECRET = "tg-secret_approve"
TOKEN = "434343:APPROVE"
GROUP = -100888
BOB = {"id": 8, "is_bot": False, "first_name": "Bob", "username": "bob"}

FILES = {
    "channels/telegram.py": (
        "from fastagent_cli.channels import telegram_channel\n\nchannel = telegram_channel()\n"
    ),
    ".env": f"TELEGRAM_BOT_TOKEN={TOKEN}\nTELEGRAM_SECRET_TOKEN={SECRET}\n",
}


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[tuple[FakeTelegram, int]]:
    root = tmp_path / "agent"
    write_agent(root, FILES)
    async with FakeTelegram() as telegram:
        env = {"TELEGRAM_API_BASE_URL": telegram.base_url}
        async with ServerProcess.spawn(*start_args(root), env=env) as server:
            yield telegram, await server.port()


async def post(port: int, update: dict[str, Any], secret: str = SECRET) -> int:
    headers = {"content-type": "application/json", "x-telegram-bot-api-secret-token": secret}
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.post(f"http://127.0.0.1:{port}/telegram", data=json.dumps(update), headers=headers) as resp,
    ):
        return resp.status


async def request_message(telegram: FakeTelegram, chat: int) -> Message:
    def found() -> Message | None:
        return next((m for m in telegram.of_chat(chat) if m.reply_markup), None)

    return await telegram.wait_until(found, what="the approval request with its keyboard")


def data_of(message: Message, index: int) -> str:
    return str(message.reply_markup["inline_keyboard"][0][index]["callback_data"])  # type: ignore[index]


async def test_only_the_asker_answers_in_a_group(running: tuple[FakeTelegram, int]) -> None:
    telegram, port = running
    updates = Updates()
    text = "@fa_test_bot ship it"
    asked = updates.message(
        text, chat_id=GROUP, chat_type="supergroup", entities=mention(text, "fa_test_bot")
    )
    assert await post(port, asked) == 200
    request = await request_message(telegram, GROUP)
    assert "deploy" in request.shown and '"env": "prod"' in request.shown
    approve = data_of(request, 0)
    assert approve.startswith("fa:ap:") and approve.endswith(":y")

    assert await post(port, updates.callback(request, approve, sender=BOB, chat_type="supergroup")) == 200
    refused = await telegram.wait_until(lambda: telegram.callback_answers, what="the refusal")
    assert refused[-1]["show_alert"] is True and "Only the person who asked" in refused[-1]["text"]
    assert request.reply_markup is not None  # nothing changed: the buttons stay
    assert await post(port, updates.callback(request, approve), secret="forged") == 401

    assert await post(port, updates.callback(request, approve, chat_type="supergroup")) == 200
    await telegram.wait_for_text(GROUP, "result: deployed prod")
    await telegram.wait_until(lambda: request.reply_markup is None, what="the keyboard removed")
    assert "Approved by @alice" in request.shown
    assert any(a["text"] == "✅ Approved" for a in telegram.callback_answers)
    again = len(telegram.callback_answers)
    assert await post(port, updates.callback(request, approve, chat_type="supergroup")) == 200
    late = await telegram.wait_until(
        lambda: telegram.callback_answers[again:], what="the late press answered"
    )
    assert late[0]["text"] == "This request is no longer waiting for an answer."


async def test_deny_in_a_private_chat(running: tuple[FakeTelegram, int]) -> None:
    telegram, port = running
    updates = Updates(first_update=500)
    assert await post(port, updates.message("ship it", chat_id=42)) == 200
    request = await request_message(telegram, 42)
    assert await post(port, updates.callback(request, data_of(request, 1))) == 200
    await telegram.wait_for_text(42, "result: Denied by the user")
    assert "Denied by @alice" in request.shown


async def test_a_press_after_a_restart_resumes_the_turn(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    write_agent(root, FILES)
    updates = Updates(first_update=900)
    async with FakeTelegram() as telegram:
        env = {"TELEGRAM_API_BASE_URL": telegram.base_url}

        async def ask(server: ServerProcess, port: int) -> Message:
            assert await post(port, updates.message("ship it", chat_id=42)) == 200
            return await request_message(telegram, 42)

        request = await asked_then_killed(root, env, ask)
        async with ServerProcess.spawn(*start_args(root), env=env) as second:
            port = await second.port()
            assert await post(port, updates.callback(request, data_of(request, 0))) == 200
            await telegram.wait_for_text(42, "result: deployed prod")
            await telegram.wait_until(lambda: request.reply_markup is None, what="the keyboard removed")
            assert "Approved by @alice" in request.shown
            await second.wait_for(r"\[telegram\] turn \S+ waits for its approval .*: the answer resumes it")
            # no new request after the restart: the one request message is the old one
            asked = [m for m in telegram.of_chat(42) if "Approve" in m.shown and "deploy" in m.shown]
            assert asked == [request]


async def test_the_other_request_after_a_restart_is_not_posted_again(tmp_path: Path) -> None:
    """Two requests wait when ``start`` is killed; after the restart the first press resumes the
    turn, whose run announces the second request again (it waits anew): the chat already shows
    it, so no new message; the second press finishes the turn."""
    root = tmp_path / "agent"
    write_agent(root, {**FILES, "apmodel.py": TWO_CALLS})
    updates = Updates(first_update=950)
    async with FakeTelegram() as telegram:
        env = {"TELEGRAM_API_BASE_URL": telegram.base_url, "APPROVALS_LOG": str(tmp_path / "log")}

        def requests() -> list[Message]:
            return [m for m in telegram.of_chat(42) if "Approve" in m.shown and "deploy" in m.shown]

        async def ask(server: ServerProcess, port: int) -> list[Message]:
            assert await post(port, updates.message("ship both", chat_id=42)) == 200
            both: list[Message] = await telegram.wait_until(
                lambda: len(requests()) == 2 and requests(), what="two requests"
            )
            return both

        first, second_request = await asked_then_killed(root, env, ask)
        async with ServerProcess.spawn(*start_args(root), env=env) as second:
            port = await second.port()
            assert await post(port, updates.callback(first, data_of(first, 0))) == 200
            await telegram.wait_until(lambda: first.reply_markup is None, what="the first answered")
            await second.wait_for(r"\[approval\] session=42 deploy approved by telegram:7")
            assert await post(port, updates.callback(second_request, data_of(second_request, 1))) == 200
            await telegram.wait_for_text(42, "results: deployed prod | Denied by the user")
            assert requests() == [first, second_request]
