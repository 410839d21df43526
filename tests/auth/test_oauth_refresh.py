"""Renewing expired subscription logins: once for any number of concurrent users of one
``auth.json`` (real ``fastagent invoke`` processes, and tasks in one process), written back 0600 in
a re-tightened 0700 directory, and a clear "log in again" when the refresh token is refused."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.auth.oauth import OAuthCredentials
from fastagent_cli.auth.store import AuthStore
from fastagent_cli.errors import CredentialError, ProviderError
from fastagent_cli.models.credentials import resolve_credential
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.state.locks import FileLock
from tests.auth.pty_driver import FASTAGENT, clean_env
from tests.fakes.oauth_server import ANSWER, OAuthServer
from tests.fakes.tokens import codex_jwt

EXPIRED = 1_000  # epoch ms: long past
MODELS = {"anthropic": "anthropic/claude-sonnet-4-5", "openai-codex": "openai-codex/gpt-5.4"}


@pytest.fixture
def server() -> Iterator[OAuthServer]:
    with OAuthServer() as fake:
        yield fake


def agent_with_login(tmp_path: Path, server: OAuthServer, provider: str, entry: dict[str, Any]) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text(f'model = "{MODELS.get(provider, "github-copilot/gpt-4o")}"\n')
    (agent / "models.json").write_text(json.dumps(server.models_json()))
    auth = agent / ".fastagent" / "auth.json"
    auth.parent.mkdir(mode=0o700)
    auth.write_text(
        json.dumps({provider: {"type": "oauth", **entry}, "openai": {"type": "api_key", "key": "k"}})
    )
    auth.chmod(0o600)
    return agent


def expired_login(server: OAuthServer, provider: str) -> dict[str, Any]:
    """A login whose access token is no longer accepted and whose refresh token is still good."""
    if provider == "anthropic":
        entry = {"refresh": "sk-ant-ort01-first", "access": "sk-ant-oat01-stale", "expires": EXPIRED}
    else:
        entry = {"refresh": "rt-first", "access": codex_jwt("acct-fake", marker="stale"), "expires": EXPIRED}
        entry["accountId"] = "acct-fake"
    server.valid_refresh[entry["refresh"]] = provider
    return entry


def start_invoke(agent: Path, home: Path, server: OAuthServer, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [FASTAGENT, "invoke", "hi", str(agent)],
        env=clean_env(home, **server.env(), **env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stored(agent: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((agent / ".fastagent" / "auth.json").read_text())
    return data


@pytest.mark.parametrize("provider", ["anthropic", "openai-codex"])
def test_two_concurrent_invokes_refresh_once(tmp_path: Path, server: OAuthServer, provider: str) -> None:
    agent = agent_with_login(tmp_path, server, provider, expired_login(server, provider))
    (agent / ".fastagent").chmod(0o755)  # widened by hand: the renewal tightens it again
    server.refresh_delay = 1.0  # both processes are surely waiting on the token endpoint at once
    runs = [start_invoke(agent, tmp_path, server) for _ in range(2)]
    outputs = [run.communicate(timeout=60) for run in runs]
    for run, (out, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, err
        assert out.strip() == ANSWER
    assert server.refreshes[provider] == 1
    entry = stored(agent)[provider]
    assert (
        entry["refresh"] not in ("rt-first", "sk-ant-ort01-first")
        and entry["refresh"] in server.valid_refresh
    )
    assert entry["expires"] > EXPIRED and server.model_tokens == [entry["access"], entry["access"]]
    assert stored(agent)["openai"] == {"type": "api_key", "key": "k"}  # other entries survive
    assert stat.S_IMODE((agent / ".fastagent" / "auth.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((agent / ".fastagent").stat().st_mode) == 0o700


@pytest.mark.parametrize("provider", ["anthropic", "openai-codex"])
def test_a_revoked_refresh_token_says_log_in_again(
    tmp_path: Path, server: OAuthServer, provider: str
) -> None:
    entry = expired_login(server, provider)
    server.revoke(entry["refresh"])
    agent = agent_with_login(tmp_path, server, provider, entry)
    before = (agent / ".fastagent" / "auth.json").read_text()
    out, err = start_invoke(agent, tmp_path, server).communicate(timeout=60)
    assert out == ""
    assert (
        f"[fastagent] failed: the {provider} login has expired and could not be renewed "
        "(400 invalid_grant: Refresh token has already been used or was revoked): "
        f"log in again with `fastagent login {provider}`\n"
    ) in err
    assert (agent / ".fastagent" / "auth.json").read_text() == before
    assert server.model_tokens == []


def test_an_unreachable_token_endpoint_is_retryable_and_keeps_the_login(
    tmp_path: Path, server: OAuthServer
) -> None:
    agent = agent_with_login(tmp_path, server, "openai-codex", expired_login(server, "openai-codex"))
    server.token_status = 503
    out, err = start_invoke(agent, tmp_path, server).communicate(timeout=60)
    assert "openai-codex: could not renew the login, try again: ChatGPT token refresh failed: 503" in err
    assert err.rstrip().endswith("(retryable)")
    assert stored(agent)["openai-codex"]["refresh"] == "rt-first"


def test_copilot_renews_its_token_with_the_stored_github_token(tmp_path: Path, server: OAuthServer) -> None:
    server.valid_refresh["gho_stored"] = "github"
    entry = {"refresh": "gho_stored", "access": "tid=stale;proxy-ep=proxy.x", "expires": EXPIRED}
    agent = agent_with_login(tmp_path, server, "github-copilot", entry)
    out, err = start_invoke(agent, tmp_path, server).communicate(timeout=60)
    assert out.strip() == ANSWER, err
    renewed = stored(agent)["github-copilot"]
    assert renewed["refresh"] == "gho_stored" and renewed["access"] in server.valid_access
    assert server.refreshes["github-copilot"] == 1


def test_environment_tokens(tmp_path: Path, server: OAuthServer) -> None:
    """GH_TOKEN is exchanged for a Copilot token; ANTHROPIC_OAUTH_TOKEN goes out as Claude Code."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps(server.models_json()))
    server.valid_refresh["gho_env"] = "github"
    (agent / "fastagent.toml").write_text('model = "github-copilot/gpt-4o"\n')
    out, err = start_invoke(agent, tmp_path, server, GH_TOKEN="gho_env").communicate(timeout=60)
    assert out.strip() == ANSWER, err
    assert server.refreshes["github-copilot"] == 1 and server.model_tokens[-1].startswith("tid=")
    server.valid_access.add("sk-ant-oat01-from-env")
    (agent / "fastagent.toml").write_text('model = "anthropic/claude-sonnet-4-5"\n')
    env = {"ANTHROPIC_OAUTH_TOKEN": "sk-ant-oat01-from-env", "ANTHROPIC_API_KEY": "sk-ant-api-ignored"}
    out, err = start_invoke(agent, tmp_path, server, **env).communicate(timeout=60)
    assert out.strip() == ANSWER, err
    assert server.model_tokens[-1] == "sk-ant-oat01-from-env"


# ----------------------------------------------------------------------------- in one process


def codex_model(server: OAuthServer) -> Any:
    models = Path(os.environ["HOME"]) / "models.json"
    models.write_text(json.dumps(server.models_json()))
    return ModelRegistry(models).resolve("openai-codex/gpt-5.4")


async def test_concurrent_turns_in_one_process_refresh_once(
    tmp_path: Path, server: OAuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    auth = tmp_path / "secrets" / "auth.json"
    AuthStore(auth).set_oauth("openai-codex", expired_login(server, "openai-codex"))
    server.refresh_delay = 0.3
    model = codex_model(server)
    source = OAuthCredentials(auth)
    assert source.peek(model).source == f"OAuth ({auth})" and source.peek(model).is_oauth
    first, second = await asyncio.gather(source.acquire(model), OAuthCredentials(auth).acquire(model))
    assert first.key == second.key and first.key in server.valid_access
    assert server.refreshes["openai-codex"] == 1
    assert resolve_credential(model, auth).key == first.key and not first.expired(0)


async def test_a_cancelled_wait_for_the_lock_does_not_keep_it(tmp_path: Path, server: OAuthServer) -> None:
    auth = tmp_path / "secrets" / "auth.json"
    store = AuthStore(auth)
    store.set_oauth("openai-codex", expired_login(server, "openai-codex"))
    holder = FileLock(store.lock_path, timeout=1)
    holder.acquire()
    waiting = asyncio.ensure_future(store.update_async(_no_change))
    await asyncio.sleep(0.1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    holder.release()
    await asyncio.sleep(0.3)  # the abandoned waiter obtains the lock, then lets it go
    again = FileLock(store.lock_path, timeout=0)
    again.acquire()
    again.release()


async def _no_change(doc: dict[str, Any]) -> None:
    return None


async def test_renewal_errors(tmp_path: Path, server: OAuthServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    auth = tmp_path / "secrets" / "auth.json"
    entry = expired_login(server, "openai-codex")
    AuthStore(auth).set_oauth("openai-codex", entry)
    model = codex_model(server)
    server.token_status = 500
    with pytest.raises(ProviderError) as transient:
        await OAuthCredentials(auth).acquire(model)
    assert transient.value.retryable
    server.token_status = None
    server.revoke(entry["refresh"])
    with pytest.raises(CredentialError, match=r"log in again with `fastagent login openai-codex`"):
        await OAuthCredentials(auth).acquire(model)
    AuthStore(auth).remove("openai-codex")
    assert OAuthCredentials(auth).peek(model).missing


def test_a_login_in_the_global_file_is_renewed_in_that_file(tmp_path: Path, server: OAuthServer) -> None:
    """An agent with no login of its own uses the one `fastagent login` wrote outside any agent
    (~/.fastagent/auth.json), and renews it there: no copy appears in the agent."""
    entry = expired_login(server, "anthropic")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text(f'model = "{MODELS["anthropic"]}"\n')
    (agent / "models.json").write_text(json.dumps(server.models_json()))
    home = tmp_path / "home"
    global_file = home / ".fastagent" / "auth.json"
    AuthStore(global_file).set_oauth("anthropic", entry)
    run = start_invoke(agent, home, server)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert out.strip() == ANSWER
    renewed = json.loads(global_file.read_text())["anthropic"]
    assert renewed["refresh"] != entry["refresh"] and renewed["expires"] > EXPIRED
    assert server.refreshes["anthropic"] == 1 and server.model_tokens == [renewed["access"]]
    assert not (agent / ".fastagent" / "auth.json").exists()


def test_the_resolvers_provider_names_are_the_registrys() -> None:
    """The resolver tells the login providers apart without importing their flows; its two name
    sets must say what the registry says."""
    from fastagent_cli.auth.oauth.providers import OAUTH_PROVIDERS
    from fastagent_cli.auth.oauth.resolver import ENV_EXCHANGING, OAUTH_NAMES

    assert set(OAUTH_PROVIDERS) == OAUTH_NAMES
    assert {n for n, p in OAUTH_PROVIDERS.items() if p.from_environment is not None} == ENV_EXCHANGING


def test_an_api_key_agent_loads_no_login_flow(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys\n"
        "from fastagent_cli.auth.oauth import OAuthCredentials\n"
        "from fastagent_cli.models.registry import ModelRegistry\n"
        "model = ModelRegistry().resolve('anthropic/claude-sonnet-4-5')\n"
        "credential = asyncio.run(OAuthCredentials(None).acquire(model))\n"
        "assert credential.key == 'sk-test', credential\n"
        "print(sorted(m for m in sys.modules if m.startswith('fastagent_cli.auth.oauth')))\n"
    )
    env = {**clean_env(tmp_path), "ANTHROPIC_API_KEY": "sk-test"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "providers" not in done.stdout and "anthropic'" not in done.stdout, done.stdout
