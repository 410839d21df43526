"""Who may call /invoke: an optional bearer token (FASTAGENT_TOKEN or [http] token, constant-time,
401), and the loud warning when anyone on the network could run this agent's bash, write or edit."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from fastagent_cli.contract import Completed, Text
from fastagent_cli.errors import ConfigError
from fastagent_cli.serving.invoke_auth import exposure_warning, resolve_invoke_token
from fastagent_cli.serving.invoke_http import create_invoke_handler
from tests.conftest import AgentFactory
from tests.serving.conftest import FakeAgent, StartServer, split_response, sse_events
from tests.serving.serving_proc import ServerProcess, get

TOKEN = "tok-3f9a1c0e8b7d4a61"


async def post(port: int, headers: dict[str, str]) -> tuple[int, str, dict[str, str]]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"http://127.0.0.1:{port}/invoke", json={"session": "s", "text": "hi"}, headers=headers
        ) as response,
    ):
        return response.status, await response.text(), dict(response.headers)


async def test_an_exposed_agent_with_bash_and_no_token_warns_loudly(make_agent: AgentFactory) -> None:
    agent = make_agent()
    async with ServerProcess.spawn("start", str(agent), "--port", "0", env={"HOST": "0.0.0.0"}) as server:
        port = await server.port()
        warning = (await server.wait_for(r"^WARN  \[fastagent\] (!!! /invoke is open.*)$")).group(1)
    assert warning == (
        f"!!! /invoke is open to anyone who can reach it on :{port} (all interfaces), with no token, and "
        "this agent has bash, write, edit: they can run commands and change files as this user. Set "
        "FASTAGENT_TOKEN (or [http] token), bind 127.0.0.1, or turn those coding tools off"
    )


async def test_a_token_from_dotenv_guards_invoke_and_is_never_printed(make_agent: AgentFactory) -> None:
    agent = make_agent({".env": f"FASTAGENT_TOKEN={TOKEN}\n"})
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "0.0.0.0") as server:
        port = await server.port()
        curl = (await server.wait_for(r"try it: (curl .*)$")).group(1)
        assert await get(port) == (200, "ok\n")  # /health stays open
        status, body, headers = await post(port, {})
        assert (status, body) == (401, "unauthorized\n")
        assert headers["WWW-Authenticate"] == 'Bearer realm="fastagent"'
        assert (await post(port, {"Authorization": f"Bearer {TOKEN}x"}))[0] == 401
        assert (await post(port, {"Authorization": f"Basic {TOKEN}"}))[0] == 401
        status, body, _ = await post(port, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200
        events = sse_events(body)
        assert isinstance(events[-1], Completed)
        assert "".join(e.delta for e in events if isinstance(e, Text)) == "echo: hi"
    assert "/invoke requires a bearer token (FASTAGENT_TOKEN)" in server.text
    assert '-H "authorization: Bearer $FASTAGENT_TOKEN"' in curl
    assert TOKEN not in server.text and "!!!" not in server.text


async def test_without_the_token_the_body_is_never_read(start_server: StartServer) -> None:
    agent = FakeAgent([Completed()])
    base = await start_server(create_invoke_handler(agent, resolve_invoke_token(TOKEN)))
    port = int(base.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:  # announce 1 MiB and send none of it: the 401 must not wait for the body
        writer.write(b"POST /invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"unauthorized\n"), 5)
    finally:
        writer.close()
    assert split_response(head)[0] == 401 and agent.calls == []


def test_the_token_comes_from_the_environment_first() -> None:
    assert resolve_invoke_token(None, {}) is None
    from_config = resolve_invoke_token("cfg-token", {})
    assert from_config is not None and from_config.source == "[http] token"
    assert from_config.matches("cfg-token") and not from_config.matches("cfg-token ")
    from_env = resolve_invoke_token("cfg-token", {"FASTAGENT_TOKEN": "env-token"})
    assert from_env is not None and from_env.source == "FASTAGENT_TOKEN" and from_env.matches("env-token")
    assert "env-token" not in repr(from_env)
    with pytest.raises(ConfigError, match="FASTAGENT_TOKEN must not contain spaces"):
        resolve_invoke_token(None, {"FASTAGENT_TOKEN": "two words"})


@pytest.mark.parametrize(
    ("host", "tunnel", "tools", "token", "warns"),
    [
        ("127.0.0.1", False, ("read", "bash", "edit", "write"), None, False),
        ("::1", False, ("bash",), None, False),
        ("127.0.0.1", True, ("bash",), None, True),  # the tunnel is public
        ("0.0.0.0", False, ("read",), None, False),  # nothing that runs commands
        ("0.0.0.0", False, ("write",), None, True),
        ("192.168.1.20", False, ("edit",), None, True),
        ("0.0.0.0", False, ("bash",), "t", False),
    ],
)
def test_exposure_warning(
    host: str, tunnel: bool, tools: tuple[str, ...], token: str | None, warns: bool
) -> None:
    resolved = resolve_invoke_token(token, {})
    assert (exposure_warning(host, 8787, tunnel=tunnel, tools=tools, token=resolved) is not None) == warns
