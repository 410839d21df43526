"""``fastagent start`` with ``session_control = true``, as the real process: the per-boot token in
``control.json`` (0600 in a 0700 directory, removed on a clean exit), ``FASTAGENT_CONTROL_TOKEN``,
the exposure warnings, and the plane answering with the token it published."""

from __future__ import annotations

import json
import signal
import stat
from pathlib import Path

import aiohttp

from fastagent_cli.serving.control import LAN_WARNING, read_control_file
from tests.conftest import AgentFactory
from tests.serving.serving_proc import ServerProcess


async def capabilities(url: str, token: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http,
        http.get(f"{url}/control/capabilities", headers={"Authorization": f"Bearer {token}"}) as resp,
    ):
        return resp.status, await resp.text()


async def test_start_mints_a_token_into_control_json_and_removes_it_on_exit(make_agent: AgentFactory) -> None:
    agent = make_agent(config="session_control = true\n")
    state_root = agent / ".fastagent"
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        port = await server.port()
        await server.wait_for(r"control plane on http://127\.0\.0\.1:\d+/control")
        control = state_root / "control.json"
        assert stat.S_IMODE(control.stat().st_mode) == 0o600
        assert stat.S_IMODE(state_root.stat().st_mode) == 0o700
        doc = json.loads(control.read_text())
        assert set(doc) == {"url", "token"} and doc["url"] == f"http://127.0.0.1:{port}"
        assert read_control_file(state_root) == (doc["url"], doc["token"])
        assert len(doc["token"]) >= 32 and doc["token"] not in server.text  # never logged
        status, body = await capabilities(doc["url"], doc["token"])
        assert status == 200 and json.loads(body)["fork"] is True
        assert (await capabilities(doc["url"], "guess"))[0] == 401
        assert "routes:    /invoke, GET /health, /control/* (session control)" in server.text
        assert "reachable on your LAN" not in server.text  # loopback: no warning
        server.send(signal.SIGINT)
        assert await server.wait() == -signal.SIGINT  # a clean exit re-raises the signal
    assert not control.exists()


async def test_a_deployer_token_is_used_and_no_file_is_written(make_agent: AgentFactory) -> None:
    agent = make_agent(config="session_control = true\n")
    env = {"FASTAGENT_CONTROL_TOKEN": "deployed-token"}
    async with ServerProcess.spawn(
        "start", str(agent), "--port", "0", "--bind", "0.0.0.0", env=env
    ) as server:
        port = await server.port()
        status, _ = await capabilities(f"http://127.0.0.1:{port}", "deployed-token")
        assert status == 200
        assert not (agent / ".fastagent" / "control.json").exists()
        warning = LAN_WARNING.format(host="0.0.0.0")
        assert f"WARN  [fastagent] {warning}" in server.text


async def test_without_session_control_there_is_no_plane(make_agent: AgentFactory) -> None:
    agent = make_agent()
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        port = await server.port()
        status, body = await capabilities(f"http://127.0.0.1:{port}", "anything")
        assert (status, body) == (404, "not found\n")
        assert not Path(agent / ".fastagent" / "control.json").exists()
        assert "not served" not in server.text and "/control" not in server.text
