"""``fastagent add feishu|lark`` through the real CLI and a fake Open Platform: scan-to-create, the
scope request for context-aware groups, the Verification Token capture for webhook ingress, and the
Request URL registration ``--tunnel`` does."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from aiohttp import web

from fastagent_cli.channels.feishu.cloud import FEISHU
from fastagent_cli.channels.feishu.register import register_request_url
from fastagent_cli.definition.dotenv import parse_dotenv
from tests.fakes.fake_feishu import FakeFeishu


async def _add(agent: Path, fake: FakeFeishu, kind: str, *args: str, **extra: str) -> tuple[int, str]:
    env = {
        **os.environ,
        "FEISHU_ACCOUNTS_BASE_URL": fake.base_url,
        "FEISHU_API_BASE_URL": fake.base_url,
        "LARK_API_BASE_URL": fake.base_url,
        "FASTAGENT_SETUP_TUNNEL": "off",
        "FASTAGENT_NO_BROWSER": "1",
        **extra,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fastagent_cli", "add", kind, str(agent), *args,
        env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    return process.returncode or 0, out.decode()


def _agent(tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text('model = "scripted/demo"\n')
    return agent


async def test_scan_to_create_scopes_and_the_token_capture(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    async with FakeFeishu() as fake:
        code, output = await _add(
            agent, fake, "feishu", "--ingress", "webhook", "--group-behavior", "context"
        )
        assert code == 0, output
        assert "valid for about 10 minutes" in output and "/confirm?code=dev-1" in output
        env = parse_dotenv((agent / ".env").read_text())
        assert env["FEISHU_APP_ID"] == fake.app_id and env["FEISHU_APP_SECRET"] == fake.app_secret
        assert env["FEISHU_VERIFICATION_TOKEN"] == "vtoken"
        scopes = [p["scope"]["add_scopes"] for p in fake.config_patches if "scope" in p]
        assert [s["scope_name"] for s in scopes[0]] == ["im:message.group_msg", "im:message:readonly"]
        assert "feishu_channel" in (agent / "channels" / "feishu.py").read_text()
        polls = fake.registration["polls"]
        code, output = await _add(agent, fake, "feishu", "--ingress", "webhook")  # resumes: no new app
        assert code == 0 and "resuming with app" in output and fake.registration["polls"] == polls

        async def health(request: web.Request) -> web.Response:
            return web.Response(text="ok")

        async def events(request: web.Request) -> web.Response:
            return web.json_response({"challenge": (await request.json())["challenge"]})

        app = web.Application()
        app.router.add_get("/health", health)
        app.router.add_post("/feishu", events)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        public = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        try:
            outcome = await register_request_url(FEISHU, public, fake.app_id, fake.app_secret, fake.base_url)
        finally:
            await runner.cleanup()
        assert outcome == "registered"
        assert fake.config_patches[-1]["event"]["request_url"] == public + "/feishu"


async def test_lark_guided_paste_is_validated(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    async with FakeFeishu() as fake:
        code, output = await _add(
            agent,
            fake,
            "lark",
            "--group-behavior",
            "mentions",
            LARK_APP_ID=fake.app_id,
            LARK_APP_SECRET="wrong",
        )
        assert code == 1 and "the lark app credentials do not work" in output, output
        code, output = await _add(
            agent, fake, "lark", LARK_APP_ID=fake.app_id, LARK_APP_SECRET=fake.app_secret
        )
        assert code == 0, output
        assert "lark_websocket_channel" in (agent / "channels" / "lark.py").read_text()
