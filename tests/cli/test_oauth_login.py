"""The three subscription logins as a user runs them: the real ``fastagent login`` on a
pseudo-terminal against fake authorization servers on 127.0.0.1 (the test plays the browser),
then a real ``fastagent invoke`` that uses the stored login against fake model endpoints."""

from __future__ import annotations

import json
import re
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.auth.pty_driver import FASTAGENT, PtyProcess, clean_env
from tests.fakes.oauth_server import ANSWER, OAuthServer

URL = r"(http://127\.0\.0\.1:\d+/\S+/(?:oauth/authorize|login/device)\S*)"


@pytest.fixture
def server() -> Iterator[OAuthServer]:
    with OAuthServer() as fake:
        yield fake


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def make_agent(tmp_path: Path, server: OAuthServer, model: str) -> Path:
    path = tmp_path / "agent"
    path.mkdir(exist_ok=True)
    (path / "fastagent.toml").write_text(f'model = "{model}"\n')
    (path / "models.json").write_text(json.dumps(server.models_json()))
    return path


def env_for(home: Path, server: OAuthServer, tmp_path: Path, **extra: str) -> dict[str, str]:
    opened = tmp_path / "browser.txt"  # the "browser": records the URL it was asked to open
    browser = f"sh -c 'echo \"$0\" >> {opened}'"
    return clean_env(home, BROWSER=browser, **server.env(), **extra)


def auth_of(agent: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((agent / ".fastagent" / "auth.json").read_text())
    return data


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def invoke(agent: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FASTAGENT, "invoke", "hi", str(agent)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_claude_pro_max_login_with_a_pasted_code(tmp_path: Path, home: Path, server: OAuthServer) -> None:
    agent = make_agent(tmp_path, server, "anthropic/claude-sonnet-4-5")
    env = env_for(home, server, tmp_path)
    with PtyProcess(["login", "anthropic"], cwd=agent, env=env) as term:
        term.expect(r"Log in to Anthropic with:")
        term.expect(r"1  Claude Pro/Max subscription")
        term.expect(r"2  Anthropic API key")
        term.expect(r"Method \[1-2\]")
        term.sendline("1")
        url = term.expect(URL).group(1)
        term.expect(r"Paste the code shown after login \(code#state\)")
        page = httpx.get(url).text  # the user logs in; the page shows code#state
        assert re.fullmatch(r"code-\d+#[\w-]+", page)
        term.sendline("not-the-right-code#wrong-state")
        term.expect_stderr("another login attempt \\(state mismatch\\)")
        term.sendline(page)
        assert term.wait() == 0, term.stderr
        assert "logged in with your Claude Pro/Max subscription" in term.stderr
    assert (tmp_path / "browser.txt").read_text().strip() == url
    entry = auth_of(agent)["anthropic"]
    assert entry["type"] == "oauth" and entry["access"].startswith("sk-ant-oat01-fake-")
    assert entry["refresh"].startswith("sk-ant-ort01-") and entry["expires"] > 0
    assert mode(agent / ".fastagent" / "auth.json") == 0o600 and mode(agent / ".fastagent") == 0o700
    done = invoke(agent, clean_env(home))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER
    assert server.model_tokens == [entry["access"]]


@pytest.mark.parametrize("how", ["browser", "paste"])
def test_chatgpt_login_through_the_local_callback(
    tmp_path: Path, home: Path, server: OAuthServer, how: str
) -> None:
    agent = make_agent(tmp_path, server, "openai-codex/gpt-5.4")
    with PtyProcess(["login", "openai-codex"], cwd=agent, env=env_for(home, server, tmp_path)) as term:
        url = term.expect(URL).group(1)
        assert "redirect_uri=http%3A%2F%2Flocalhost%3A" in url and "originator=fastagent" in url
        term.expect(r"paste the redirect URL here")
        if how == "browser":  # the browser follows the redirect to fastagent's callback server
            page = httpx.get(url, follow_redirects=True)
            assert page.status_code == 200 and "Authentication successful" in page.text
        else:  # the browser is on another machine: the user pastes where it was sent
            redirect = httpx.get(url).headers["location"]
            term.sendline(redirect)
        assert term.wait() == 0, term.stderr
        assert "logged in with your ChatGPT Plus/Pro subscription (Codex)" in term.stderr
    entry = auth_of(agent)["openai-codex"]
    assert entry["type"] == "oauth" and entry["accountId"] == "acct-fake"
    done = invoke(agent, clean_env(home))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER and server.model_tokens == [entry["access"]]


def test_github_copilot_device_login(tmp_path: Path, home: Path, server: OAuthServer) -> None:
    agent = make_agent(tmp_path, server, "github-copilot/gpt-4o")
    with PtyProcess(["login", "github-copilot"], cwd=agent, env=env_for(home, server, tmp_path)) as term:
        term.expect(r"GitHub Enterprise URL or domain \(Enter for github\.com\)")
        term.sendline("")
        found = term.expect(r"Go to (\S+) and enter the code:  ([A-Z0-9-]+)")
        assert found.group(1) == f"{server.origin}/github/login/device" and found.group(2) == "ABCD-1234"
        server.approve_device()
        assert term.wait() == 0, term.stderr
        assert "logged in with your GitHub Copilot subscription" in term.stderr
        assert re.search(r"enabled (\d+) of \1 Copilot models", term.stderr), term.stderr
    assert (tmp_path / "browser.txt").read_text().strip() == found.group(1)
    entry = auth_of(agent)["github-copilot"]
    assert entry["refresh"].startswith("gho_fake") and "proxy-ep=" in entry["access"]
    assert server.paths("POST").count("/github/login/oauth/access_token") >= 1
    done = invoke(agent, clean_env(home))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER and server.model_tokens[-1] == entry["access"]


def test_login_menu_lists_subscriptions(tmp_path: Path, home: Path, server: OAuthServer) -> None:
    agent = make_agent(tmp_path, server, "openai-codex/gpt-5.4")
    with PtyProcess(["login"], cwd=agent, env=env_for(home, server, tmp_path)) as term:
        listing = term.expect(r"Provider \[1-\d+ or name\]")
        menu = term.text[: listing.start()]
        assert re.search(
            r"anthropic\s+subscription or API key\s+ANTHROPIC_OAUTH_TOKEN, ANTHROPIC_API_KEY", menu
        )
        assert re.search(r"openai-codex\s+subscription\s*\n", menu)
        assert re.search(r"github-copilot\s+subscription\s+COPILOT_GITHUB_TOKEN", menu)
        term.sendline("openai-codex")
        term.expect(URL)
        term.expect(r"paste the redirect URL here")
        term.send("\x03")
        assert term.wait() == 130
    assert not (agent / ".fastagent" / "auth.json").exists()


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        (
            "openai-codex",
            "openai-codex has no environment variable: run `fastagent login openai-codex` in a terminal",
        ),
        ("github-copilot", "set COPILOT_GITHUB_TOKEN, GH_TOKEN, GITHUB_TOKEN in the environment"),
        ("anthropic", "set ANTHROPIC_OAUTH_TOKEN, ANTHROPIC_API_KEY in the environment"),
    ],
)
def test_no_terminal_fails_fast_naming_what_to_do(
    tmp_path: Path, home: Path, server: OAuthServer, provider: str, message: str
) -> None:
    agent = make_agent(tmp_path, server, "openai-codex/gpt-5.4")
    done = subprocess.run(
        [FASTAGENT, "login", provider],
        cwd=agent,
        env=clean_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and message in done.stderr and done.stderr.count("\n") == 1
    assert server.requests == []


def test_logout_removes_a_subscription_login(tmp_path: Path, home: Path, server: OAuthServer) -> None:
    agent = make_agent(tmp_path, server, "openai-codex/gpt-5.4")
    auth = agent / ".fastagent" / "auth.json"
    auth.parent.mkdir(mode=0o700)
    login = {"type": "oauth", "refresh": "rt", "access": "at", "expires": 1}
    auth.write_text(json.dumps({"openai-codex": login, "openai": {"type": "api_key", "key": "k"}}))
    done = subprocess.run(
        [FASTAGENT, "logout", "openai-codex"],
        cwd=agent,
        env=clean_env(home),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and f"removed the openai-codex credential from {auth}" in done.stderr
    assert auth_of(agent) == {"openai": {"type": "api_key", "key": "k"}}


def test_interrupting_the_device_login_saves_nothing(tmp_path: Path, home: Path, server: OAuthServer) -> None:
    agent = make_agent(tmp_path, server, "github-copilot/gpt-4o")
    with PtyProcess(["login", "github-copilot"], cwd=agent, env=env_for(home, server, tmp_path)) as term:
        term.expect(r"GitHub Enterprise URL or domain")
        term.sendline("")
        term.expect(r"Go to \S+ and enter the code:")
        term.expect_stderr("waiting for the code to be entered")
        term.proc.send_signal(signal.SIGINT)  # Ctrl+C while polling, as the terminal would send it
        assert term.wait() == 130
        assert "Aborted" in term.stderr and "Traceback" not in term.stderr
    assert not (agent / ".fastagent" / "auth.json").exists()
