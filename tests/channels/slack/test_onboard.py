"""``fastagent add slack`` onboarding through the real CLI and a fake Slack: manifest create (with
Slack's url_verification of the setup URL), OAuth install, ``.env``, resuming after a failed
exchange without a second app, ``--replace-config``, and the Request URL update ``--tunnel`` does."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
from pathlib import Path

import aiohttp
from aiohttp import web

from fastagent_cli.channels.slack.register import register_request_url
from fastagent_cli.definition.dotenv import parse_dotenv
from tests.fakes.fake_slack import FakeSlack


async def _add(agent: Path, slack: FakeSlack, *args: str) -> tuple[int, str]:
    env = {
        **os.environ,
        "SLACK_API_BASE_URL": slack.api_url,
        "SLACK_OAUTH_BASE_URL": slack.base_url,
        "SLACK_CONFIG_TOKEN": "xoxe.xoxp-config",
        "SLACK_CONFIG_REFRESH_TOKEN": "xoxe-refresh",
        "FASTAGENT_SETUP_TUNNEL": "off",
        "FASTAGENT_NO_BROWSER": "1",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fastagent_cli", "add", "slack", str(agent), *args,
        env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert process.stdout is not None
    output = ""
    async with aiohttp.ClientSession() as http:
        while line := (await asyncio.wait_for(process.stdout.readline(), 60)).decode():
            output += line
            found = re.search(r"Approve the installation in Slack: (\S+)", line)
            if found:
                async with http.get(found.group(1)) as response:
                    assert response.status == 200
    return await process.wait(), output


def _agent(tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text('model = "scripted/demo"\n')
    return agent


async def test_onboarding_creates_installs_and_resumes(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    async with FakeSlack() as slack:
        slack.fail("oauth.v2.access", "invalid_code")
        code, output = await _add(agent, slack)
        assert code == 1 and "Slack rejected the OAuth exchange (invalid_code)" in output, output
        assert list(slack.apps) == ["A0001"]
        env = parse_dotenv((agent / ".env").read_text())
        assert env["SLACK_SIGNING_SECRET"] == "ssecret" and "SLACK_BOT_TOKEN" not in env
        code, output = await _add(agent, slack)  # resumes the same app
        assert code == 0, output
        assert "Resuming Slack app A0001" in output and list(slack.apps) == ["A0001"]
        assert slack.apps["A0001"]["updates"] == 1
        env = parse_dotenv((agent / ".env").read_text())
        assert env["SLACK_BOT_TOKEN"] == "xoxb-installed" and env["SLACK_CLIENT_ID"] == "cid-A0001"
        assert (
            env["SLACK_BOT_REFRESH_TOKEN"] == "xoxe-1-refresh" and int(env["SLACK_BOT_TOKEN_EXPIRES_AT"]) > 0
        )
        manifest = slack.apps["A0001"]["manifest"]
        assert "channels:history" in manifest["oauth_config"]["scopes"]["bot"]
        assert manifest["settings"]["token_rotation_enabled"] and "agent_view" in manifest["features"]
        onboarding = agent / ".fastagent" / "channels" / "slack" / "onboarding.json"
        assert stat.S_IMODE(onboarding.stat().st_mode) == 0o600
        state = json.loads(onboarding.read_text())["data"]
        assert state["installedAt"] and "clientSecret" not in state and "signingSecret" not in state
        assert (agent / "channels" / "slack.py").exists() and (agent / "tools" / "slack_send.py").exists()
        code, output = await _add(agent, slack, "--replace-config")
        assert code == 0 and "Replaced the Slack App Configuration tokens" in output

        # `dev --tunnel`: the onboarded app's Request URL moves to <public url>/slack.
        async def health(request: web.Request) -> web.Response:
            return web.Response(text="ok")

        async def events(request: web.Request) -> web.Response:
            return web.json_response({"challenge": (await request.json())["challenge"]})

        app = web.Application()
        app.router.add_get("/health", health)
        app.router.add_post("/slack", events)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        public = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        try:
            outcome = await register_request_url(
                public, agent / ".fastagent", {"api_base_url": slack.api_url}
            )
        finally:
            await runner.cleanup()
        assert outcome == "registered"
        assert (
            slack.apps["A0001"]["manifest"]["settings"]["event_subscriptions"]["request_url"]
            == public + "/slack"
        )
        assert await register_request_url(public, tmp_path / "nowhere", {}) == "manual"


async def test_no_onboard_writes_only_the_files(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    async with FakeSlack() as slack:
        code, output = await _add(agent, slack, "--no-onboard", "--group-behavior", "mentions")
    assert code == 0 and not slack.calls, output
    assert 'group_behavior="mentions"' in (agent / "channels" / "slack.py").read_text()
