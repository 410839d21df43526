"""The GitHub channel mounted in-process: the check order of row L2, intents, turns, logs."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from fastagent_cli.channels import GithubEvent, Intent, github_channel
from fastagent_cli.channels.github import sign_payload
from fastagent_cli.errors import ServeError
from fastagent_cli.serving.channels import ChannelContext
from tests.channels.conftest import FakeAgent, Mount, answer, failing

SECRET = "gh-webhook-secret"
PR_OPENED = {
    "action": "opened",
    "number": 7,
    "pull_request": {"number": 7},
    "repository": {"full_name": "o/r"},
}


def on(event: GithubEvent) -> list[Intent]:
    if event.event == "pull_request" and event.action == "opened":
        return [
            Intent(f"review:{event.delivery_id}", f"Review #{event.payload['number']}"),
            Intent("audit", "Log it"),
        ]
    return []


async def deliver(
    url: str,
    body: bytes,
    *,
    event: str = "pull_request",
    secret: str | None = SECRET,
    content_type: str = "application/json",
    delivery: str = "d-1",
    method: str = "POST",
) -> tuple[int, str]:
    headers = {"content-type": content_type, "x-github-event": event, "x-github-delivery": delivery}
    if secret is not None:
        headers["x-hub-signature-256"] = sign_payload(secret, body)
    data = io.BytesIO(body) if len(body) > 1 << 20 else body
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url + "/webhook", data=data, headers=headers) as response,
    ):
        return response.status, await response.text()


async def test_checks_answer_in_order(mount: Mount) -> None:
    agent = FakeAgent(answer("ok"))
    bot = await mount(github_channel(on=on, secret=SECRET), agent)
    body = json.dumps(PR_OPENED).encode()
    assert await deliver(bot.url, body, method="GET") == (405, "POST only\n")
    too_big = b"{" + b" " * (25 << 20) + b"}"
    assert await deliver(bot.url, too_big, secret=None) == (413, "payload too large\n")  # before verifying
    assert await deliver(bot.url, body, secret=None) == (401, "invalid signature\n")
    assert await deliver(bot.url, body, secret="another") == (401, "invalid signature\n")
    assert await deliver(bot.url, body, event="ping") == (204, "")
    assert await deliver(bot.url, b"not json") == (400, "invalid json\n")
    form = "application/x-www-form-urlencoded"
    assert await deliver(bot.url, b"other=1", content_type=form) == (400, "missing form payload\n")
    assert agent.calls == []


async def test_a_verified_delivery_is_202_and_its_turns_run_after(mount: Mount, caplog: Any) -> None:
    agent = FakeAgent(answer("reviewed"))
    bot = await mount(github_channel(on=on, secret=SECRET), agent)
    with caplog.at_level(logging.INFO, logger="fastagent.channel"):
        assert await deliver(bot.url, json.dumps(PR_OPENED).encode(), delivery="abc") == (202, "")
        form = urlencode({"payload": json.dumps(PR_OPENED)}).encode()
        assert await deliver(
            bot.url, form, content_type="application/x-www-form-urlencoded", delivery="def"
        ) == (
            202,
            "",
        )
        assert await deliver(bot.url, json.dumps({"action": "closed"}).encode(), delivery="ghi") == (202, "")
        for _ in range(100):
            if caplog.text.count("turn done") == 4:
                break
            await asyncio.sleep(0.05)
    assert sorted((s.session, p.text) for s, p in agent.calls) == [
        ("audit", "Log it"),
        ("audit", "Log it"),
        ("review:abc", "Review #7"),
        ("review:def", "Review #7"),
    ]
    assert "[github] turn start: turn=abc#0 session=review:abc event=pull_request.opened" in caplog.text
    assert "[github] turn start: turn=abc#1 session=audit event=pull_request.opened" in caplog.text
    assert "[github] turn done: turn=abc#0 session=review:abc (" in caplog.text
    assert "ghi" not in caplog.text  # an ignored delivery runs nothing


async def test_a_failed_turn_is_logged(mount: Mount, caplog: Any) -> None:
    agent = FakeAgent(failing("model says no", retryable=True))
    bot = await mount(github_channel(on=lambda e: [Intent("s", "go")], secret=SECRET), agent)
    with caplog.at_level(logging.INFO, logger="fastagent.channel"):
        assert await deliver(bot.url, b"{}", delivery="x") == (202, "")
        for _ in range(100):
            if "turn failed" in caplog.text:
                break
            await asyncio.sleep(0.05)
    assert "[github] turn failed: turn=x#0 session=s (" in caplog.text
    assert "model says no" in caplog.text


async def test_on_that_raises_is_a_500_and_a_log_line(mount: Mount, caplog: Any) -> None:
    def broken(event: GithubEvent) -> list[Intent]:
        raise KeyError("pull_request")

    bot = await mount(github_channel(on=broken, secret=SECRET), FakeAgent())
    with caplog.at_level(logging.ERROR, logger="fastagent.channel"):
        assert await deliver(bot.url, b"{}", delivery="y") == (500, "on(event) failed\n")
    assert "[github] on(event) raised for delivery y: KeyError: 'pull_request'" in caplog.text


async def test_async_on_and_mapping_intents_are_accepted(mount: Mount) -> None:
    async def on_async(event: GithubEvent) -> list[dict[str, str]]:
        return [{"session": "m", "text": event.event}]

    agent = FakeAgent(answer("ok"))
    bot = await mount(github_channel(on=on_async, secret=SECRET), agent)
    assert await deliver(bot.url, b"{}", event="issues") == (202, "")
    for _ in range(100):
        if agent.calls:
            break
        await asyncio.sleep(0.05)
    assert [(s.session, p.text) for s, p in agent.calls] == [("m", "issues")]


def test_an_empty_secret_is_an_error_when_mounted_not_when_imported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GITHUB_WEBHOOK_SECRET", raising=False)
    channel = github_channel(on=on)  # importing a channel file needs no secret (deploy inspects it)
    with pytest.raises(ServeError, match="set GITHUB_WEBHOOK_SECRET in .env"):
        channel(ChannelContext(FakeAgent(), tmp_path))
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", "from-env")
    assert "/webhook" in channel(ChannelContext(FakeAgent(), tmp_path))


def test_register_webhook_prints_the_payload_url(caplog: Any) -> None:
    with caplog.at_level(logging.INFO, logger="fastagent.channel"):
        assert github_channel(on=on).register_webhook("https://x.trycloudflare.com/") == "manual"
    assert "Payload URL https://x.trycloudflare.com/webhook" in caplog.text


def _comment(body: str) -> bytes:
    payload = {
        "action": "created",
        "issue": {"number": 7},
        "comment": {"id": 1, "body": body, "user": {"login": "maria", "id": 13}},
        "repository": {"full_name": "o/r"},
        "sender": {"login": "maria", "id": 13},
    }
    return json.dumps(payload).encode()


def _every_comment(event: GithubEvent) -> list[Intent]:
    return [Intent("comments", event.payload["comment"]["body"])] if event.event == "issue_comment" else []


async def _turns(agent: FakeAgent, count: int) -> list[str]:
    for _ in range(100):
        if len(agent.calls) >= count:
            break
        await asyncio.sleep(0.05)
    return [p.text for _, p in agent.calls]


async def test_without_a_token_an_approve_comment_is_an_ordinary_delivery(
    mount: Mount, caplog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    agent = FakeAgent(answer("ok"))
    with caplog.at_level(logging.INFO, logger="fastagent.channel"):
        bot = await mount(github_channel(on=_every_comment, secret=SECRET), agent)
        assert await deliver(bot.url, _comment("/approve"), event="issue_comment") == (202, "")
        assert await _turns(agent, 1) == ["/approve"]
    assert "[github] no GITHUB_TOKEN: tool approvals are answered on the control plane" in caplog.text
    assert not (bot.state_root / "channels" / "github").exists()  # no token, no state


async def test_with_a_token_commands_are_the_channels_and_other_comments_reach_on(mount: Mount) -> None:
    agent = FakeAgent(answer("ok"))
    channel = github_channel(on=_every_comment, secret=SECRET, token="t", api_url="http://127.0.0.1:9")
    bot = await mount(channel, agent)
    assert await deliver(bot.url, _comment("/deny not now"), event="issue_comment") == (202, "")
    assert await deliver(bot.url, _comment("<!-- fastagent:approval -->\nmine"), event="issue_comment") == (
        202,
        "",
    )
    assert await deliver(bot.url, _comment("LGTM, /approve later"), event="issue_comment") == (202, "")
    assert await _turns(agent, 1) == ["LGTM, /approve later"]
    await asyncio.sleep(0.2)
    assert len(agent.calls) == 1
