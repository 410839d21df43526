"""Remote MCP servers behind OAuth: the SDK-built server (a real process on 127.0.0.1) checks
bearer tokens with the tests' own authorization server. The login's flow (discovery, dynamic
registration, PKCE, the resource indicator, the loopback redirect), then the agent's side: the
token on every request, a refresh on a 401 or before expiry, and a revoked refresh token turned
into a tool result (and one log line) naming the login to run."""

from __future__ import annotations

import asyncio
import json
import logging
import stat
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from fastagent_cli.auth.mcp.discovery import NoLoginNeeded
from fastagent_cli.auth.mcp.tokens import StoredTokens
from fastagent_cli.errors import CredentialError
from fastagent_cli.tools.base import ToolContext, ToolResult
from fastagent_cli.tools.mcp import McpToolSource
from fastagent_cli.tools.mcp_config import McpServerConfig
from tests.fakes.mcp_auth_server import McpAuthServer
from tests.tools.mcp.oauth_servers import OAuthMcpServer, free_port, log_in
from tests.tools.mcp.test_mcp_http import HttpServer

LOGIN = "run 'fastagent login mcp:remote'"


@pytest.fixture
def authz() -> Iterator[McpAuthServer]:
    with McpAuthServer() as server:
        yield server


@pytest.fixture
def protected(authz: McpAuthServer) -> Iterator[Callable[[str], OAuthMcpServer]]:
    started: list[OAuthMcpServer] = []

    def make(transport: str = "streamable-http") -> OAuthMcpServer:
        server = OAuthMcpServer(authz.origin, transport).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def auth_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "auth.json"


@pytest.fixture
async def sources(
    tmp_path: Path, auth_path: Path
) -> AsyncIterator[Callable[[McpServerConfig], McpToolSource]]:
    made: list[McpToolSource] = []

    def make(config: McpServerConfig) -> McpToolSource:
        source = McpToolSource(
            {"remote": config}, tmp_path, tokens=lambda name, cfg: StoredTokens(auth_path, name, cfg)
        )
        made.append(source)
        return source

    yield make
    for source in made:
        await source.aclose()


async def call(source: McpToolSource, tool_name: str, **args: object) -> tuple[bool, str]:
    tool = next(t for t in await source.tools() if t.name == tool_name)
    result: ToolResult = await tool.execute(args, ToolContext(cwd=Path.cwd()))
    return result.is_error, " ".join(b["text"] for b in result.content if b["type"] == "text")


def stored(auth_path: Path) -> dict[str, object]:
    entry: dict[str, object] = json.loads(auth_path.read_text())["mcp:remote"]
    return entry


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_login_then_every_request_carries_its_token(
    authz: McpAuthServer,
    protected: Callable[[str], OAuthMcpServer],
    sources: Callable[[McpServerConfig], McpToolSource],
    auth_path: Path,
    transport: str,
) -> None:
    server = protected(transport)
    config = McpServerConfig(url=server.url, transport=transport)  # type: ignore[arg-type]
    await log_in("remote", config, auth_path)
    entry = stored(auth_path)
    assert stat.S_IMODE(auth_path.stat().st_mode) == 0o600
    resource = f"http://127.0.0.1:{server.port}" + ("/mcp" if transport == "streamable-http" else "")
    assert entry["resource"] == resource and entry["issuer"] == authz.origin
    assert entry["client"]["client_id"] in authz.clients  # type: ignore[index]
    (asked,) = authz.authorize_queries
    assert asked["code_challenge_method"] == "S256" and asked["resource"] == resource
    assert asked["scope"] == "mcp:tools"
    assert asked["redirect_uri"].startswith("http://127.0.0.1:") and asked["redirect_uri"].endswith(
        "/callback"
    )
    source = sources(config)
    assert await call(source, "remote__add", a=2, b=3) == (False, "5")
    assert source.diagnostics() == []
    assert authz.grants == ["authorization_code"]


async def test_a_refused_token_is_refreshed_once_and_the_call_answered(
    authz: McpAuthServer,
    protected: Callable[[str], OAuthMcpServer],
    sources: Callable[[McpServerConfig], McpToolSource],
    auth_path: Path,
) -> None:
    server = protected("streamable-http")
    config = McpServerConfig(url=server.url)
    await log_in("remote", config, auth_path)
    source = sources(config)
    assert await call(source, "remote__add", a=1, b=1) == (False, "2")
    before = stored(auth_path)
    authz.expire_access()  # the server now answers 401 to the stored token
    assert await call(source, "remote__add", a=2, b=2) == (False, "4")
    assert authz.grants == ["authorization_code", "refresh_token"]
    after = stored(auth_path)
    assert after["access"] != before["access"] and after["refresh"] != before["refresh"]
    assert stat.S_IMODE(auth_path.stat().st_mode) == 0o600


async def test_a_token_past_its_expiry_is_renewed_before_the_request(
    authz: McpAuthServer,
    protected: Callable[[str], OAuthMcpServer],
    sources: Callable[[McpServerConfig], McpToolSource],
    auth_path: Path,
) -> None:
    server = protected("streamable-http")
    config = McpServerConfig(url=server.url)
    await log_in("remote", config, auth_path)
    doc = json.loads(auth_path.read_text())
    doc["mcp:remote"]["expires"] = 1  # long past
    auth_path.write_text(json.dumps(doc))
    source = sources(config)
    assert await call(source, "remote__add", a=3, b=4) == (False, "7")
    assert authz.grants == ["authorization_code", "refresh_token"]
    assert authz.refused == []  # renewed first, not after a refusal
    assert int(stored(auth_path)["expires"]) > 1  # type: ignore[call-overload]


async def test_a_revoked_refresh_token_answers_the_call_with_the_login_to_run(
    authz: McpAuthServer,
    protected: Callable[[str], OAuthMcpServer],
    sources: Callable[[McpServerConfig], McpToolSource],
    auth_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = protected("streamable-http")
    config = McpServerConfig(url=server.url)
    await log_in("remote", config, auth_path)
    source = sources(config)
    assert await call(source, "remote__add", a=1, b=2) == (False, "3")
    authz.expire_access()
    authz.revoke_refresh()
    caplog.set_level(logging.WARNING, "fastagent.mcp")
    for _ in range(2):
        failed, text = await call(source, "remote__add", a=1, b=2)
        assert failed
        assert text == (
            "MCP server remote has a login that expired and could not be renewed (400 invalid_grant): "
            + LOGIN
        )
    lines = [r.getMessage() for r in caplog.records if LOGIN in r.getMessage()]
    assert lines == [f"[mcp] server {text.removeprefix('MCP server ')}"]  # one line, not one per call
    assert "Traceback" not in caplog.text
    # a new login is used at once: the running agent needs no restart
    await log_in("remote", config, auth_path)
    assert await call(source, "remote__add", a=5, b=5) == (False, "10")


async def test_without_a_login_the_server_is_a_diagnostic_naming_the_login(
    protected: Callable[[str], OAuthMcpServer], sources: Callable[[McpServerConfig], McpToolSource]
) -> None:
    source = sources(McpServerConfig(url=protected("streamable-http").url))
    assert await source.tools() == []
    assert source.diagnostics() == [f'mcp server "remote": cannot start: needs a login: {LOGIN}']


async def test_a_server_without_oauth_is_unchanged(
    sources: Callable[[McpServerConfig], McpToolSource], tmp_path: Path
) -> None:
    plain = HttpServer("streamable-http", {"NOTE_FILE": str(tmp_path / "note")})
    plain.start()
    try:
        source = sources(McpServerConfig(url=plain.url))
        assert await call(source, "remote__add", a=2, b=3) == (False, "5")
        assert await call(source, "remote__header", name="authorization") == (False, "")
        assert source.diagnostics() == []
    finally:
        plain.stop()


async def test_the_login_of_a_server_that_needs_none_is_refused(tmp_path: Path, auth_path: Path) -> None:
    plain = HttpServer("streamable-http", {"NOTE_FILE": str(tmp_path / "note")})
    plain.start()
    try:
        with pytest.raises(
            NoLoginNeeded, match="needs no login: it answered 200 to a request without a token"
        ):
            await log_in("remote", McpServerConfig(url=plain.url), auth_path)
    finally:
        plain.stop()
    assert not auth_path.exists()


async def test_without_registration_a_configured_client_logs_in(
    authz: McpAuthServer,
    protected: Callable[[str], OAuthMcpServer],
    sources: Callable[[McpServerConfig], McpToolSource],
    auth_path: Path,
) -> None:
    authz.registration = False
    server = protected("streamable-http")
    with pytest.raises(CredentialError, match="offers no dynamic client registration: register a client"):
        await log_in("remote", McpServerConfig(url=server.url), auth_path)
    port = free_port()
    authz.add_client("by-hand", f"http://127.0.0.1:{port}/callback", secret="s3cret")
    config = McpServerConfig.model_validate(
        {
            "url": server.url,
            "oauth": {"client_id": "by-hand", "client_secret": "s3cret", "redirect_port": port},
        }
    )
    await log_in("remote", config, auth_path)
    assert stored(auth_path)["client"] == {  # type: ignore[comparison-overlap]
        "client_id": "by-hand",
        "client_secret": "s3cret",
        "token_endpoint_auth_method": "client_secret_post",
        "redirect_uri": f"http://127.0.0.1:{port}/callback",
        "registered": False,
        "issuer": authz.origin,
    }
    assert await call(sources(config), "remote__add", a=1, b=1) == (False, "2")
    authz.expire_access()
    assert await call(sources(config), "remote__add", a=2, b=1) == (False, "3")  # refreshed with the secret
    assert authz.grants == ["authorization_code", "refresh_token"]


async def test_a_second_login_reuses_its_registration(
    authz: McpAuthServer, protected: Callable[[str], OAuthMcpServer], auth_path: Path
) -> None:
    config = McpServerConfig(url=protected("streamable-http").url)
    await log_in("remote", config, auth_path)
    first = stored(auth_path)["client"]
    await log_in("remote", config, auth_path)
    assert stored(auth_path)["client"] == first
    assert len(authz.clients) == 1


async def test_over_sse_a_refused_renewal_answers_the_call_at_once(
    authz: McpAuthServer,
    protected: Callable[[str], OAuthMcpServer],
    sources: Callable[[McpServerConfig], McpToolSource],
    auth_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = protected("sse")
    config = McpServerConfig(url=server.url, transport="sse")
    await log_in("remote", config, auth_path)
    source = sources(config)
    assert await call(source, "remote__add", a=1, b=2) == (False, "3")
    authz.expire_access()
    assert await asyncio.wait_for(call(source, "remote__add", a=2, b=2), 20) == (False, "4")  # renewed
    authz.expire_access()
    authz.revoke_refresh()
    caplog.set_level(logging.WARNING)
    for _ in range(2):
        failed, text = await asyncio.wait_for(call(source, "remote__add", a=1, b=2), 20)
        assert failed and text.endswith(LOGIN), text
    assert "Traceback" not in caplog.text and "Error in post_writer" not in caplog.text
    assert [r.getMessage() for r in caplog.records if LOGIN in r.getMessage()] == [
        f"[mcp] server {text.removeprefix('MCP server ')}"
    ]


async def test_a_token_without_the_scope_the_server_requires_asks_for_a_new_login(
    protected: Callable[[str], OAuthMcpServer],
    sources: Callable[[McpServerConfig], McpToolSource],
    auth_path: Path,
) -> None:
    server = protected("streamable-http")
    config = McpServerConfig.model_validate({"url": server.url, "oauth": {"scopes": ["profile"]}})
    await log_in("remote", config, auth_path)
    assert stored(auth_path)["scope"] == "profile"
    source = sources(config)
    assert await source.tools() == []
    assert source.diagnostics() == [
        'mcp server "remote": cannot start: needs a login with more scopes (Required scope: mcp:tools): '
        + LOGIN
    ]
