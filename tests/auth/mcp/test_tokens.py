"""The agent's side of a stored MCP login, without a server: what it says when a login cannot be
used, and that a passing failure (the authorization server down) does not tell the user to log in
again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.auth.mcp.tokens import StoredTokens
from fastagent_cli.tools.mcp_auth import LoginRequired, McpAuthError
from fastagent_cli.tools.mcp_config import McpServerConfig

URL = "http://127.0.0.1:9/mcp"


def write(path: Path, **entry: Any) -> None:
    base = {
        "type": "oauth",
        "kind": "mcp",
        "url": URL,
        "resource": URL,
        "token_endpoint": "http://127.0.0.1:9/token",  # nothing listens there
        "client": {"client_id": "c1", "token_endpoint_auth_method": "none"},
        "access": "at-1",
        "refresh": "rt-1",
        "expires": None,
    }
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(json.dumps({"mcp:remote": {**base, **entry}}))


@pytest.fixture
def tokens(tmp_path: Path) -> StoredTokens:
    return StoredTokens(tmp_path / "state" / "auth.json", "remote", McpServerConfig(url=URL))


async def test_no_login_is_no_token(tokens: StoredTokens) -> None:
    assert await tokens.access() is None
    with pytest.raises(
        LoginRequired, match=r"^MCP server remote needs a login: run 'fastagent login mcp:remote'$"
    ):
        await tokens.renew("at-1")


async def test_a_token_without_expiry_is_used_as_it_is(tokens: StoredTokens) -> None:
    write(tokens.path)
    assert await tokens.access() == "at-1"


async def test_an_expired_login_without_a_refresh_token_needs_a_new_login(tokens: StoredTokens) -> None:
    write(tokens.path, refresh=None, expires=1)
    with pytest.raises(LoginRequired, match=r"cannot be renewed \(no refresh token\): run 'fastagent login"):
        await tokens.access()


async def test_a_login_for_another_url_is_not_sent(tokens: StoredTokens) -> None:
    write(tokens.path, url="http://127.0.0.1:9/other")
    with pytest.raises(LoginRequired, match=r"has a login for another URL \(http://127.0.0.1:9/other\)"):
        await tokens.access()


async def test_an_unreachable_authorization_server_is_a_passing_failure(tokens: StoredTokens) -> None:
    write(tokens.path, expires=1)
    with pytest.raises(McpAuthError) as caught:
        await tokens.access()
    assert not isinstance(caught.value, LoginRequired)
    assert str(caught.value).startswith("MCP server remote could not renew its login, try again: ")
    assert "cannot reach http://127.0.0.1:9/token" in str(caught.value)
    assert json.loads(tokens.path.read_text())["mcp:remote"]["refresh"] == "rt-1"  # kept as it was


async def test_a_token_renewed_by_another_process_is_used_without_a_request(tokens: StoredTokens) -> None:
    write(tokens.path, access="at-2")  # the one refused was at-1; at-2 is fresh (no expiry)
    assert await tokens.renew("at-1") == "at-2"  # the token endpoint (nothing there) was not asked
