"""The Bot API client (retries, flood waits, downloads), ``setWebhook`` registration after
``/health``, and the ``telegram_send`` tool, all against the fake Bot API."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from fastagent_cli.channels import telegram_send
from fastagent_cli.channels.telegram.api import BotApi, Target, TelegramApiError
from fastagent_cli.channels.telegram.register import register_telegram_webhook
from tests.fakes.fake_telegram import FakeTelegram

TOKEN = "777:SECRETPART"


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
async def telegram() -> Any:
    async with FakeTelegram() as fake:
        yield fake


async def test_a_429_waits_retry_after_and_gives_up_after_three(telegram: FakeTelegram) -> None:
    sleeps = Sleeps()
    api = BotApi(TOKEN, telegram.base_url, sleep=sleeps)
    telegram.fail("getMe", 429, "Too Many Requests: retry after 7", retry_after=7, times=2)
    assert (await api.call("getMe"))["id"] == 777
    assert sleeps.waits == [7.0, 7.0]
    telegram.fail("getMe", 429, "Too Many Requests: retry after 2", retry_after=2, times=4)
    with pytest.raises(TelegramApiError, match=r"getMe failed: 429 .* \(gave up after 3 retries\)"):
        await api.call("getMe")
    await api.aclose()


async def test_an_error_names_the_method_and_never_the_token(telegram: FakeTelegram) -> None:
    api = BotApi(TOKEN, telegram.base_url)
    with pytest.raises(TelegramApiError) as caught:
        await api.call("noSuchMethod")
    assert str(caught.value) == "telegram noSuchMethod failed: 404 Not Found: method not found"
    await api.aclose()
    refused = BotApi(TOKEN, "http://127.0.0.1:9", sleep=Sleeps())
    with pytest.raises(TelegramApiError) as caught:
        await refused.call("sendMessage", {"chat_id": 1, "text": "x"})
    assert "SECRETPART" not in str(caught.value) and str(caught.value).startswith("telegram sendMessage: ")
    await refused.aclose()


async def test_a_5xx_is_retried_only_where_repeating_is_safe(telegram: FakeTelegram) -> None:
    sleeps = Sleeps()
    api = BotApi(TOKEN, telegram.base_url, sleep=sleeps)
    telegram.fail("getMe", 502, "Bad Gateway")
    await api.call("getMe")
    assert sleeps.waits == [1.0]
    telegram.fail("sendMessage", 502, "Bad Gateway")
    with pytest.raises(TelegramApiError, match="502 Bad Gateway"):
        await api.send_message(Target(1), "x")  # it may have been delivered: not repeated
    assert len(telegram.methods("sendMessage")) == 1
    await api.aclose()


async def test_downloads_are_capped(telegram: FakeTelegram) -> None:
    api = BotApi(TOKEN, telegram.base_url)
    telegram.add_file("f", "documents/a.bin", b"x" * 2048)
    assert await api.download("f") == (b"x" * 2048, "documents/a.bin")
    with pytest.raises(TelegramApiError, match=r"too large \(max 1024 bytes\)"):
        await api.download("f", max_bytes=1024)
    await api.aclose()


async def test_editing_to_the_same_text_is_not_an_error(telegram: FakeTelegram) -> None:
    api = BotApi(TOKEN, telegram.base_url)
    message_id = await api.send_message(Target(5), "same", html=False)
    assert message_id is not None
    await api.edit_message_text(5, message_id, "same")
    assert telegram.shown(5) == ["same"]
    await api.aclose()


async def health_server(answers: list[int]) -> tuple[web.AppRunner, str, list[int]]:
    served: list[int] = []

    async def health(request: web.Request) -> web.Response:
        status = answers.pop(0) if answers else 200
        served.append(status)
        return web.Response(status=status, text="ok\n" if status == 200 else "starting\n")

    app = web.Application()
    app.router.add_get("/health", health)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}", served


async def test_the_webhook_is_set_once_the_public_url_answers_health(
    telegram: FakeTelegram, caplog: Any
) -> None:
    runner, base, served = await health_server([503, 503])
    try:
        with caplog.at_level(logging.INFO, logger="fastagent.channel"):
            outcome = await register_telegram_webhook(
                base,
                bot_token=TOKEN,
                secret_token="tok",
                api_base_url=telegram.base_url,
                health_interval_s=0.05,
            )
    finally:
        await runner.cleanup()
    assert outcome == "registered"
    assert served == [503, 503, 200]
    assert telegram.webhooks == [{"url": f"{base}/telegram", "secret_token": "tok"}]
    assert f"[telegram] webhook registered: {base}/telegram" in caplog.text


async def test_registration_reports_manual_and_failed(telegram: FakeTelegram, caplog: Any) -> None:
    with caplog.at_level(logging.INFO, logger="fastagent.channel"):
        assert (
            await register_telegram_webhook("https://h.example", bot_token="", secret_token="s") == "manual"
        )
        assert (
            await register_telegram_webhook(
                "http://127.0.0.1:9",
                bot_token=TOKEN,
                secret_token="s",
                health_timeout_s=0.2,
                health_interval_s=0.05,
            )
            == "failed"
        )
        runner, base, _ = await health_server([])
        telegram.fail("setWebhook", 400, "Bad Request: bad webhook: HTTPS url must be provided for webhook")
        try:
            failed = await register_telegram_webhook(
                base,
                bot_token=TOKEN,
                secret_token="s",
                api_base_url=telegram.base_url,
                health_interval_s=0.05,
            )
        finally:
            await runner.cleanup()
    assert failed == "failed"
    assert "set TELEGRAM_BOT_TOKEN and TELEGRAM_SECRET_TOKEN in .env" in caplog.text
    assert "http://127.0.0.1:9/health did not answer within 0.2 s" in caplog.text
    assert "setWebhook failed (telegram setWebhook failed: 400 Bad Request: bad webhook" in caplog.text
    assert 'curl "https://api.telegram.org/bot$TELEGRAM_BOT_TOKEN/setWebhook"' in caplog.text
    assert "SECRETPART" not in caplog.text


async def test_telegram_send_sends_text_and_files(
    telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("TELEGRAM_API_BASE_URL", telegram.base_url)
    assert await telegram_send(9, text="<b>Daily</b> digest") == "sent a message to chat 9"
    assert await telegram_send(9, text="line\n" * 1500) == "sent 2 messages to chat 9"
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF")
    assert await telegram_send("9", path=str(report), caption="here") == "sent report.pdf to chat 9"
    [upload] = telegram.uploads
    assert (
        upload["document"] == ("report.pdf", b"%PDF")
        and upload["caption"] == "here"
        and upload["chat_id"] == "9"
    )
    assert telegram.shown(9)[0] == "Daily digest"
    assert set(telegram.tokens) == {TOKEN}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "pass exactly one of `text`"),
        ({"text": "a", "path": "/x"}, "pass exactly one of `text`"),
        ({"text": "a", "caption": "c"}, "`caption` and `as_photo` go with `path`"),
        ({"path": "relative.txt"}, "`path` must be absolute"),
        ({"path": "/no/such/file"}, "cannot read /no/such/file"),
    ],
)
async def test_telegram_send_refuses_what_it_cannot_do(
    telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], message: str
) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("TELEGRAM_API_BASE_URL", telegram.base_url)
    with pytest.raises(ValueError, match=message):
        await telegram_send(1, **kwargs)


async def test_telegram_send_needs_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    with pytest.raises(ValueError, match="TELEGRAM_BOT_TOKEN is not set"):
        await telegram_send(1, text="x")
    await asyncio.sleep(0)
