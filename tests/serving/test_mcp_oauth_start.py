"""A served agent (the real ``fastagent start``) on a remote MCP server behind OAuth: its turns use
the stored login; once the access token is dead and the refresh token revoked, the tool's result
and one log line name the login to run (no browser is ever opened, nothing hangs); a new login is
used by the running server at once."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastagent_cli.tools.mcp_config import McpServerConfig
from tests.conftest import AgentFactory
from tests.fakes.mcp_auth_server import McpAuthServer
from tests.serving.serving_proc import ServerProcess, answer, invoke
from tests.tools.mcp.oauth_servers import OAuthMcpServer, log_in

RESPONDER = """
def reply(request):
    last = request.messages[-1]
    if last["role"] == "toolResult":
        text = " ".join(b.get("text", "") for b in last["content"] if b.get("type") == "text")
        return {"text": ("tool failed: " if last["isError"] else "tool said: ") + text}
    return {"toolCalls": [{"name": "remote__add", "args": {"a": 2, "b": 3}}]}
"""
LOGIN = "run 'fastagent login mcp:remote'"


@pytest.fixture
def authz() -> Iterator[McpAuthServer]:
    with McpAuthServer() as server:
        yield server


@pytest.fixture
def mcp_server(authz: McpAuthServer) -> Iterator[OAuthMcpServer]:
    server = OAuthMcpServer(authz.origin).start()
    yield server
    server.stop()


async def test_a_served_agent_says_which_login_to_run_when_its_token_cannot_be_renewed(
    make_agent: AgentFactory, authz: McpAuthServer, mcp_server: OAuthMcpServer, tmp_path: Path
) -> None:
    config = f'\n[mcp_servers.remote]\nurl = "{mcp_server.url}"\n'
    agent = make_agent({"responder.py": RESPONDER}, model="scripted/responder:reply", config=config)
    auth_path = agent / ".fastagent" / "auth.json"
    server_config = McpServerConfig(url=mcp_server.url)
    await log_in("remote", server_config, auth_path)
    marker = tmp_path / "browser-opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\ntouch {marker}\n")
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    env = {"BROWSER": str(browser), "DISPLAY": ":0"}
    async with ServerProcess.spawn(
        "start", str(agent), "--port", "0", "--bind", "127.0.0.1", env=env
    ) as server:
        port = await server.port()
        assert answer(await invoke(port, "s1", "add")) == "tool said: 5"
        authz.expire_access()
        authz.revoke_refresh()
        expected = (
            "MCP server remote has a login that expired and could not be renewed (400 invalid_grant): "
            + LOGIN
        )
        assert answer(await invoke(port, "s2", "add")) == f"tool failed: {expected}"
        assert answer(await invoke(port, "s3", "add")) == f"tool failed: {expected}"
        await server.wait_for(
            r"\[mcp\] server remote has a login that expired .*" + "fastagent login mcp:remote"
        )
        assert server.count(r"fastagent login mcp:remote") == 1  # one log line, not one per call
        # the user logs in again: the running server uses the new login at once
        await log_in("remote", server_config, auth_path)
        assert answer(await invoke(port, "s4", "add")) == "tool said: 5"
    assert "Traceback" not in server.text
    assert not marker.exists()  # a served agent never opens a browser
    assert authz.refused == ["invalid_grant"]  # the refused refresh token was not sent again
