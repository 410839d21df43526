"""``fastagent login mcp:<name>`` and the agent that uses its tokens, as users run them: the real
``login`` process (the URL read from its output and opened by a stand-in browser that follows the
redirects to its loopback port), then ``fastagent invoke`` with a scripted model calling the
server's tool. The MCP server is the SDK-built one behind OAuth; the authorization server is the
tests' own (``tests/fakes/mcp_auth_server.py``)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import AgentFactory, RunCli, cli_command
from tests.fakes.mcp_auth_server import McpAuthServer
from tests.tools.mcp.oauth_servers import URL_LINE, OAuthMcpServer, browse

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


@pytest.fixture
def agent(make_agent: AgentFactory, mcp_server: OAuthMcpServer) -> Path:
    config = f'\n[mcp_servers.remote]\nurl = "{mcp_server.url}"\n\n[mcp_servers.local]\ncommand = "true"\n'
    return make_agent({"responder.py": RESPONDER}, model="scripted/responder:reply", config=config)


def auth_file(agent: Path) -> Path:
    return agent / ".fastagent" / "auth.json"


class LoginProcess:
    """``fastagent login mcp:... --no-browser`` running; :meth:`url` is the line it printed."""

    def __init__(self, agent: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [*cli_command(), "login", *args, "--no-browser"],
            cwd=agent,
            env=dict(os.environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout = ""
        self.stderr = ""

    def url(self) -> str:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout += line
            found = URL_LINE.match(line.rstrip("\n"))
            if found:
                return found.group(1)
        raise AssertionError(f"no URL printed: {self.finish()} {self.stderr}")

    def finish(self) -> int:
        out, err = self.process.communicate(timeout=60)
        self.stdout += out
        self.stderr += err
        return self.process.returncode


def log_in(agent: Path) -> LoginProcess:
    login = LoginProcess(agent, "mcp:remote")
    page = browse(login.url())
    assert page.status_code == 200 and "Authentication successful" in page.text
    assert login.finish() == 0, login.stderr
    return login


def test_login_stores_the_tokens_and_invoke_calls_the_tool_with_them(
    agent: Path, authz: McpAuthServer, run_cli: RunCli
) -> None:
    login = log_in(agent)
    path = auth_file(agent)
    assert f"[fastagent] logged in to MCP server remote; saved to {path}" in login.stderr
    assert "Open this URL in a browser to log in to MCP server remote" in login.stdout
    entry = json.loads(path.read_text())["mcp:remote"]
    assert entry["type"] == "oauth" and entry["access"] in authz.access and entry["refresh"] in authz.refresh
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    done = run_cli("invoke", "add please", str(agent))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tool said: 5"
    assert authz.grants == ["authorization_code"]
    # the access token runs out: the next turn refreshes it and still succeeds
    authz.expire_access()
    done = run_cli("invoke", "add please", str(agent))
    assert (done.returncode, done.stdout.strip()) == (0, "tool said: 5"), done.stderr
    assert authz.grants == ["authorization_code", "refresh_token"]
    # logout removes it
    out = run_cli("logout", "mcp:remote", str(agent))
    assert out.returncode == 0 and "removed the mcp:remote credential" in out.stderr
    assert "mcp:remote" not in json.loads(path.read_text())


def test_a_revoked_refresh_token_names_the_login_to_run(
    agent: Path, authz: McpAuthServer, run_cli: RunCli
) -> None:
    log_in(agent)
    authz.expire_access()
    authz.revoke_refresh()
    done = run_cli("invoke", "add please", str(agent))
    assert done.returncode == 0, done.stderr  # the turn itself completes
    assert (
        "[mcp] server remote has a login that expired and could not be renewed (400 invalid_grant): " + LOGIN
    ) in done.stderr.splitlines()
    assert "Traceback" not in done.stderr
    assert authz.grants == ["authorization_code"] and authz.refused == ["invalid_grant"]  # asked once


def test_two_processes_with_an_expired_token_refresh_it_once(
    agent: Path, authz: McpAuthServer, run_cli: RunCli
) -> None:
    log_in(agent)
    authz.expire_access()
    authz.refresh_delay = 1.0  # the first refresh is still in flight when the second process asks
    results: list[subprocess.CompletedProcess[str]] = []

    def invoke() -> None:
        results.append(run_cli("invoke", "add please", str(agent), timeout=120))

    threads = [threading.Thread(target=invoke) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [(r.returncode, r.stdout.strip()) for r in results] == [(0, "tool said: 5")] * 2, [
        r.stderr for r in results
    ]
    assert authz.grants == ["authorization_code", "refresh_token"]  # one refresh, no spent-token refusal
    assert authz.refused == []


def test_a_denied_consent_is_a_one_line_error(agent: Path, authz: McpAuthServer) -> None:
    authz.deny = True
    login = LoginProcess(agent, "mcp:remote")
    page = browse(login.url())
    assert page.status_code == 400
    assert login.finish() == 1
    assert login.stderr.splitlines()[-1] == (
        "Error: the authorization server refused the login: access_denied (the user said no)"
    )
    assert not auth_file(agent).exists()


def test_no_answer_from_the_browser_times_out(agent: Path) -> None:
    login = LoginProcess(agent, "mcp:remote", "--timeout", "1")
    login.url()
    assert login.finish() == 1
    assert login.stderr.splitlines()[-1] == "Error: no answer from the browser within 1 s; nothing was saved"
    assert not auth_file(agent).exists()


def test_bad_server_names_are_usage_errors(agent: Path, run_cli: RunCli, make_agent: AgentFactory) -> None:
    unknown = run_cli("login", "mcp:nope", str(agent))
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == (
        f'Error: no MCP server "nope" in {agent / "fastagent.toml"} (its servers: remote, local)'
    )
    local = run_cli("login", "mcp:local", str(agent))
    assert local.returncode == 2
    assert local.stderr.strip() == (
        'Error: MCP server "local" is a command the agent starts; only url servers log in with OAuth'
    )
    empty = run_cli("login", "mcp:", str(agent))
    assert empty.returncode == 2 and "name the MCP server" in empty.stderr


def test_a_server_that_needs_no_login_is_refused(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    from tests.tools.mcp.test_mcp_http import HttpServer

    plain = HttpServer("streamable-http", {"NOTE_FILE": str(tmp_path / "note")})
    plain.start()
    try:
        agent = make_agent(config=f'\n[mcp_servers.remote]\nurl = "{plain.url}"\n')
        done = run_cli("login", "mcp:remote", str(agent), "--no-browser")
    finally:
        plain.stop()
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"Error: {plain.url} needs no login: it answered 200 to a request without a token"
    )


def test_login_opens_the_browser_when_one_is_at_hand(
    agent: Path, authz: McpAuthServer, run_cli: RunCli, tmp_path: Path
) -> None:
    browser = tmp_path / "browser.py"  # $BROWSER: a "browser" that follows the URL's redirects
    browser.write_text(
        f"#!{sys.executable}\nimport sys, httpx\nhttpx.get(sys.argv[1], follow_redirects=True, timeout=30)\n"
    )
    browser.chmod(0o755)
    done = run_cli("login", "mcp:remote", str(agent), "--timeout", "60", env={"BROWSER": str(browser)})
    assert done.returncode == 0, done.stderr
    assert "logged in to MCP server remote" in done.stderr
    assert authz.grants == ["authorization_code"]
    assert json.loads(auth_file(agent).read_text())["mcp:remote"]["access"] in authz.access
