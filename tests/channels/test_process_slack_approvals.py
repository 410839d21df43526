"""Slack approvals through the real ``fastagent start`` against the fake Slack: the request
arrives in the thread with Block Kit buttons, a press is posted to ``/slack/interactivity``
signed like the events (a forged one is a 401), a channel member who did not ask is told so
ephemerally and nothing changes, the asker's press approves and the message says who; a press
after a SIGKILL and a restart of ``start`` resumes the turn without asking again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.channels.approvals_agent import asked_then_killed, start_args, write_agent
from tests.fakes.fake_slack import FakeSlack, Posted, message
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

SECRET = "slack-approvals-secret"
FILES = {
    "channels/slack.py": "from fastagent_cli.channels import slack_channel\n\nchannel = slack_channel()\n",
    ".env": f"SLACK_BOT_TOKEN=xoxb-test\nSLACK_SIGNING_SECRET={SECRET}\n",
}


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[tuple[FakeSlack, int]]:
    root = tmp_path / "agent"
    write_agent(root, FILES)
    async with FakeSlack() as slack:
        env = {"SLACK_API_BASE_URL": slack.api_url}
        async with ServerProcess.spawn(*start_args(root), env=env) as server:
            yield slack, await server.port()


async def post(port: int, path: str, body: bytes, headers: dict[str, str]) -> int:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http,
        http.post(f"http://127.0.0.1:{port}{path}", data=body, headers=headers) as response,
    ):
        return response.status


async def test_only_the_asker_answers_and_the_message_says_who(running: tuple[FakeSlack, int]) -> None:
    slack, port = running
    ask = message("<@UBOT> ship it", channel="C1", user="U1", ts="300.1", kind="app_mention")
    body, headers = slack.event(ask, secret=SECRET)
    assert await post(port, "/slack", body, headers) == 200

    def request() -> Posted | None:
        return next((m for m in slack.in_thread("C1", "300.1") if m.blocks), None)

    posted = await slack.wait_until(request, what="the approval request with buttons")
    assert "deploy" in posted.text and any(b["type"] == "actions" for b in posted.blocks or [])
    assert '"env": "prod"' in str(posted.blocks)

    forged, forged_headers = slack.interaction(posted, "fa_approval_approve", user="U1", secret="forged")
    assert await post(port, "/slack/interactivity", forged, forged_headers) == 401

    other, other_headers = slack.interaction(posted, "fa_approval_approve", user="U2", secret=SECRET)
    assert await post(port, "/slack/interactivity", other, other_headers) == 200
    note = await slack.wait_until(lambda: slack.responses, what="the ephemeral refusal")
    assert note[0]["response_type"] == "ephemeral" and "Only the person who asked" in note[0]["text"]
    assert any(b["type"] == "actions" for b in posted.blocks or [])  # nothing changed

    mine, mine_headers = slack.interaction(posted, "fa_approval_approve", user="U1", secret=SECRET)
    assert await post(port, "/slack/interactivity", mine, mine_headers) == 200
    await slack.wait_for_text("C1", "result: deployed prod")
    await slack.wait_until(
        lambda: not any(b["type"] == "actions" for b in posted.blocks or []), what="the buttons removed"
    )
    assert "Approved by <@U1>" in posted.text


def request_in(slack: FakeSlack, channel: str, thread: str) -> Posted | None:
    return next((m for m in slack.in_thread(channel, thread) if m.blocks), None)


async def test_a_press_after_a_restart_resumes_the_turn(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    write_agent(root, FILES)
    async with FakeSlack() as slack:
        env = {"SLACK_API_BASE_URL": slack.api_url}

        async def ask(server: ServerProcess, port: int) -> Posted:
            asked = message("<@UBOT> ship it", channel="C1", user="U1", ts="400.1", kind="app_mention")
            body, headers = slack.event(asked, secret=SECRET)
            assert await post(port, "/slack", body, headers) == 200
            posted: Posted = await slack.wait_until(
                lambda: request_in(slack, "C1", "400.1"), what="the approval request with buttons"
            )
            return posted

        posted = await asked_then_killed(root, env, ask)
        async with ServerProcess.spawn(*start_args(root), env=env) as second:
            port = await second.port()
            press, headers = slack.interaction(posted, "fa_approval_approve", user="U1", secret=SECRET)
            assert await post(port, "/slack/interactivity", press, headers) == 200
            await slack.wait_for_text("C1", "result: deployed prod")
            await slack.wait_until(lambda: "Approved by <@U1>" in posted.text, what="the request updated")
            await second.wait_for(r"\[slack\] turn \S+ waits for its approval .*: the answer resumes it")
            # no new request after the restart: the one request message is the old one
            asked = [m for m in slack.in_thread("C1", "400.1") if "Approve" in m.text]
            assert asked == [posted]
