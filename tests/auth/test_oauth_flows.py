"""The login flows in-process with a scripted user, against the fake authorization servers: the
paths a terminal test would take minutes to walk (bad pastes, a busy callback port, a stale tab,
GitHub's ``slow_down`` / ``access_denied`` / expiry), and the small parsers they rely on."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fastagent_cli.auth.oauth import LoginContext, TokenError, anthropic, github_copilot, openai_codex
from fastagent_cli.auth.oauth.callback_server import CallbackServer
from fastagent_cli.auth.oauth.common import parse_pasted_code, pkce_pair
from fastagent_cli.auth.store import AuthStore
from fastagent_cli.cli.oauth_login import browser_command
from fastagent_cli.errors import CredentialError
from tests.fakes.oauth_server import OAuthServer


class ScriptedUI:
    """Answers prompts from a list (a callable answer can act, e.g. play the browser, first)."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.shown: list[str] = []
        self.notes: list[str] = []
        self.opened: list[str] = []

    def show(self, text: str) -> None:
        self.shown.append(text)

    def progress(self, text: str) -> None:
        self.notes.append(text)

    def open_browser(self, url: str) -> None:
        self.opened.append(url)

    async def ask(self, prompt: str) -> str:
        if not self.answers:
            await asyncio.Event().wait()  # a user who never types
        answer = self.answers.pop(0)
        return str(await answer(self) if callable(answer) else answer)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OAuthServer]:
    with OAuthServer() as fake:
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        yield fake


async def authorize(ui: ScriptedUI) -> str:
    async with httpx.AsyncClient() as client:
        return (await client.get(ui.opened[-1])).text


async def test_anthropic_retries_a_bad_paste_then_exchanges(server: OAuthServer) -> None:
    ui = ScriptedUI("", "code-1#not-this-login", authorize)
    entry = await anthropic.login(ui, LoginContext())
    assert entry["access"].startswith("sk-ant-oat01-") and entry["refresh"].startswith("sk-ant-ort01-")
    assert ui.notes[:2] == [
        "no code entered",
        "that code belongs to another login attempt (state mismatch); paste the latest one",
    ]
    token_call = next(body for _, path, _, body in server.requests if path == "/anthropic/v1/oauth/token")
    assert (
        token_call["grant_type"] == "authorization_code"
        and token_call["code_verifier"] == token_call["state"]
    )
    challenge = base64.urlsafe_b64encode(hashlib.sha256(token_call["code_verifier"].encode()).digest())
    assert f"code_challenge={challenge.rstrip(b'=').decode()}" in ui.opened[0]


async def test_anthropic_gives_up_after_three_bad_pastes(server: OAuthServer) -> None:
    with pytest.raises(CredentialError, match="no usable code after 3 tries; nothing was saved"):
        await anthropic.login(ScriptedUI("", "", ""), LoginContext())


async def test_codex_falls_back_to_pasting_when_the_port_is_taken(
    server: OAuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        monkeypatch.setenv("FASTAGENT_OPENAI_CODEX_CALLBACK_PORT", str(busy.getsockname()[1]))

        async def paste(ui: ScriptedUI) -> str:
            async with httpx.AsyncClient() as client:
                return (await client.get(ui.opened[-1])).headers["location"]

        entry = await openai_codex.login(ScriptedUI(paste), LoginContext())
    assert entry["accountId"] == "acct-fake" and entry["refresh"].startswith("rt-fake-")


def ipv4(url: str) -> str:
    """``localhost`` as the browser would reach it here (the callback listens on 127.0.0.1 only)."""
    return url.replace("//localhost:", "//127.0.0.1:")


async def test_codex_ignores_a_stale_tab(server: OAuthServer) -> None:
    browsing: list[asyncio.Task[None]] = []

    async def browser(url: httpx.URL) -> None:
        redirect = ipv4(url.params["redirect_uri"])
        async with httpx.AsyncClient() as client:
            stale = await client.get(redirect, params={"code": "old", "state": "other-login"})
            assert stale.status_code == 400 and "state mismatch" in stale.text
            denied = await client.get(
                redirect, params={"error": "access_denied", "state": url.params["state"]}
            )
            assert denied.status_code == 400 and "access_denied" in denied.text
            location = (await client.get(str(url))).headers["location"]
            assert (await client.get(ipv4(location))).status_code == 200

    async def never_paste(ui: ScriptedUI) -> str:
        browsing.append(asyncio.create_task(browser(httpx.URL(ui.opened[-1]))))
        await asyncio.Event().wait()  # the callback ends the login
        return ""

    entry = await openai_codex.login(ScriptedUI(never_paste), LoginContext())
    await browsing[0]
    assert entry["accountId"] == "acct-fake"


async def test_callback_server_hands_over_one_code() -> None:
    async with CallbackServer("/auth/callback", "s1") as callback:
        async with httpx.AsyncClient() as client:
            url = f"http://127.0.0.1:{callback.port}/auth/callback"
            assert (await client.get(url, params={"state": "s1"})).status_code == 400
            assert (await client.get(url, params={"code": "c1", "state": "s1"})).status_code == 200
            assert (await client.get(url, params={"code": "c2", "state": "s1"})).status_code == 200
        assert await callback.code() == "c1"


async def test_copilot_device_flow_answers(server: OAuthServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(github_copilot, "MIN_POLL_S", 0.01)
    server.device_interval = 0.01
    server.device_answers = [{"error": "authorization_pending"}, {"error": "slow_down", "interval": 0.02}]
    server.approve_device()
    ui = ScriptedUI("")
    context = LoginContext(base_url=f"{server.origin}/copilot", models=("gpt-4o", "claude-sonnet-4.5"))
    entry = await github_copilot.login(ui, context)
    assert ui.shown == [f"Go to {server.origin}/github/login/device and enter the code:  ABCD-1234"]
    assert ui.notes[-1] == "enabled 2 of 2 Copilot models for this account" and "enterpriseUrl" not in entry
    policies = sorted(p for p in server.paths("POST") if p.endswith("/policy"))
    assert policies == ["/copilot/models/claude-sonnet-4.5/policy", "/copilot/models/gpt-4o/policy"]
    server.device_answers = [{"error": "access_denied", "error_description": "The user denied access"}]
    with pytest.raises(CredentialError, match="denied in the browser"):
        await github_copilot.login(ScriptedUI(""), LoginContext())
    server.device_answers = [{"error": "expired_token"}]
    with pytest.raises(CredentialError, match="expired before it was entered"):
        await github_copilot.login(ScriptedUI(""), LoginContext())
    with pytest.raises(CredentialError, match="is not a GitHub Enterprise URL or domain"):
        await github_copilot.login(ScriptedUI("https://"), LoginContext())


async def test_copilot_exchange_refused(server: OAuthServer) -> None:
    with pytest.raises(TokenError) as info:
        await github_copilot.exchange("gho_unknown")
    assert info.value.permanent and "401" in info.value.detail and "Bad credentials" in info.value.detail


def test_parsers() -> None:
    assert parse_pasted_code("abc#xyz") == ("abc", "xyz")
    assert parse_pasted_code("  http://localhost:1455/auth/callback?code=c&state=s ") == ("c", "s")
    assert parse_pasted_code("code=c&state=s") == ("c", "s")
    assert parse_pasted_code("justcode") == ("justcode", None)
    assert parse_pasted_code("") == (None, None)
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128 and "=" not in challenge
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert challenge == digest
    assert github_copilot.normalize_domain("https://corp.ghe.com/login") == "corp.ghe.com"
    assert github_copilot.normalize_domain("corp.ghe.com") == "corp.ghe.com"
    assert github_copilot.normalize_domain("  ") is None


def test_browser_command() -> None:
    url = "https://example.test/x?a=1"
    assert browser_command(url, {"BROWSER": "firefox --new-tab"}) == ["firefox", "--new-tab", url]
    assert browser_command(url, {"BROWSER": "open -a Safari %s:lynx"}) == ["open", "-a", "Safari", url]
    if sys.platform != "darwin":
        assert browser_command(url, {}) is None  # no display: never a text browser in this terminal


def test_store_keeps_logins_beside_keys(tmp_path: Path) -> None:
    store = AuthStore(tmp_path / "s" / "auth.json")
    store.set_api_key("openai", "sk-1")
    store.set_oauth("openai-codex", {"refresh": "r", "access": "a", "expires": 5, "accountId": "x"})
    assert store.logins() == {"openai": "api_key", "openai-codex": "oauth"}
    assert store.read()["openai-codex"] == {
        "type": "oauth",
        "refresh": "r",
        "access": "a",
        "expires": 5,
        "accountId": "x",
    }
    with pytest.raises(CredentialError, match="incomplete"):
        store.set_oauth("anthropic", {"access": "a"})
