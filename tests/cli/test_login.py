"""``fastagent login`` / ``logout`` as a user runs them: the real process on a pseudo-terminal,
verifying keys against a local fake provider (``models.json`` re-targets ``openai`` and ``groq``)."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastagent_cli.auth.store import AuthStore
from tests.auth.fake_key_server import ANSWER, KeyServer
from tests.auth.pty_driver import FASTAGENT, PtyProcess, clean_env

KEY_PROMPT = r"OpenAI API key \(hidden"


@pytest.fixture
def server() -> Iterator[KeyServer]:
    with KeyServer(good=("sk-good", "gsk-good")) as fake:
        yield fake


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def agent(tmp_path: Path, server: KeyServer) -> Path:
    path = tmp_path / "agent"
    (path / "skills" / "demo").mkdir(parents=True)
    (path / "fastagent.toml").write_text('model = "openai/gpt-5-mini"\n')
    providers = {"openai": {"baseUrl": server.openai_base}, "groq": {"baseUrl": server.openai_base}}
    (path / "models.json").write_text(json.dumps({"providers": providers}))
    return path


def auth_file(agent: Path) -> Path:
    return agent / ".fastagent" / "auth.json"


def stored(path: Path) -> dict[str, str]:
    return {name: entry["key"] for name, entry in json.loads(path.read_text()).items()}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run(args: list[str], cwd: Path, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FASTAGENT, *args],
        cwd=cwd,
        env=clean_env(home, **env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_valid_key_is_stored_0600_in_a_0700_dir(agent: Path, home: Path, server: KeyServer) -> None:
    with PtyProcess(["login", "openai"], cwd=agent, env=clean_env(home)) as term:
        term.expect(KEY_PROMPT)
        term.sendline("sk-good")
        assert term.wait() == 0
        assert "sk-good" not in term.text  # hidden: the terminal shows asterisks
        assert "*******" in term.text
        assert f"OpenAI key verified and saved to {auth_file(agent)}" in term.stderr
    assert stored(auth_file(agent)) == {"openai": "sk-good"}
    assert mode(auth_file(agent)) == 0o600
    assert mode(auth_file(agent).parent) == 0o700
    assert [(m, p) for m, p, _ in server.requests] == [("GET", "/v1/models")]


def test_rejected_key_is_not_kept_and_asked_again(agent: Path, home: Path, server: KeyServer) -> None:
    with PtyProcess(["login", "openai"], cwd=agent, env=clean_env(home)) as term:
        term.expect(KEY_PROMPT)
        term.sendline("sk-wrong")
        term.expect(KEY_PROMPT)  # asked again
        assert not auth_file(agent).exists()
        term.sendline("sk-good")
        assert term.wait() == 0
        assert (
            "OpenAI rejected this key, it was not saved: openai: 401 Unauthorized: Incorrect API key provided"
            in term.stderr
        )
    assert stored(auth_file(agent)) == {"openai": "sk-good"}
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("sk-close", "but it could not be checked: openai: "),
        (
            "sk-quota",
            "but it could not be checked: openai: 429 Too Many Requests: You exceeded your current quota",
        ),
    ],
)
def test_inconclusive_check_keeps_the_key_and_prints_why(
    agent: Path, home: Path, key: str, message: str
) -> None:
    with PtyProcess(["login", "openai"], cwd=agent, env=clean_env(home)) as term:
        term.expect(KEY_PROMPT)
        term.sendline(key)
        assert term.wait() == 0
        assert f"OpenAI key saved to {auth_file(agent)}, {message}" in term.stderr
        later = " ".join(term.stderr.split())
        assert 'check it later with `fastagent invoke "hi" --model openai/' in later
        assert "or run `fastagent login openai` again" in later
    assert stored(auth_file(agent)) == {"openai": key}


def test_provider_picked_from_the_list(agent: Path, home: Path) -> None:
    with PtyProcess(["login"], cwd=agent, env=clean_env(home, OPENAI_API_KEY="sk-env")) as term:
        term.expect("Log in to which provider")
        listing = term.expect(r"Provider \[1-\d+ or name\]")
        before = term.text[: listing.start()]
        assert "openai" in before and "OPENAI_API_KEY" in before and "anthropic" in before
        assert "ollama" not in before  # takes no key
        term.sendline("groq")
        term.expect(r"Groq API key \(hidden")
        term.sendline("gsk-good")
        assert term.wait() == 0
    assert stored(auth_file(agent)) == {"groq": "gsk-good"}


def test_two_concurrent_logins_both_end_up_in_the_file(agent: Path, home: Path) -> None:
    env = clean_env(home)
    with (
        PtyProcess(["login", "openai"], cwd=agent, env=env) as first,
        PtyProcess(["login", "groq"], cwd=agent, env=env) as second,
    ):
        first.expect(KEY_PROMPT)
        second.expect(r"Groq API key \(hidden")
        first.sendline("sk-good")
        second.sendline("gsk-good")
        assert first.wait() == 0, first.stderr
        assert second.wait() == 0, second.stderr
    assert stored(auth_file(agent)) == {"openai": "sk-good", "groq": "gsk-good"}
    assert mode(auth_file(agent)) == 0o600


def test_outside_any_agent_writes_the_global_file(tmp_path: Path, home: Path) -> None:
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    with socket.socket() as sock:  # a proxy port nothing listens on: no request leaves this machine
        sock.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = clean_env(home, HTTPS_PROXY=proxy, HTTP_PROXY=proxy, ALL_PROXY=proxy, NO_PROXY="")
    with PtyProcess(["login", "openai"], cwd=nowhere, env=env) as term:
        term.expect(KEY_PROMPT)
        term.sendline("sk-anything")
        assert term.wait() == 0
        global_file = home / ".fastagent" / "auth.json"
        assert f"no agent here: using the global credential file {global_file}" in term.stderr
        assert "could not be checked" in term.stderr
    assert stored(global_file) == {"openai": "sk-anything"}
    assert mode(global_file) == 0o600 and mode(global_file.parent) == 0o700
    assert not (nowhere / ".fastagent").exists()


def test_inside_an_agent_but_not_at_its_root_refuses(agent: Path, home: Path) -> None:
    done = run(["login", "openai"], cwd=agent / "skills" / "demo", home=home)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"Error: {agent / 'skills' / 'demo'} is inside the agent at {agent}, not at its root: "
        f"cd {agent} (or point fastagent there)"
    )
    assert not auth_file(agent).exists()


def test_no_input_or_no_terminal_is_an_error(agent: Path, home: Path) -> None:
    done = run(["login", "openai", "--no-input"], cwd=agent, home=home)
    assert done.returncode == 1
    assert done.stderr.startswith(
        "Error: login reads the key from a terminal (--no-input); without one, set "
    )
    assert "OPENAI_API_KEY" in done.stderr
    piped = run(["login", "openai"], cwd=agent, home=home)
    assert piped.returncode == 1
    assert "login reads the key from a terminal; without one" in piped.stderr
    assert not auth_file(agent).exists()


def test_unknown_or_keyless_provider_is_a_usage_error(agent: Path, home: Path) -> None:
    done = run(["login", "nope"], cwd=agent, home=home)
    assert done.returncode == 2
    known = "providers you can log in to: openai, anthropic, openai-codex, github-copilot, openrouter"
    assert f'"nope" is not a known provider; {known}' in done.stderr
    keyless = run(["login", "ollama"], cwd=agent, home=home)
    assert keyless.returncode == 2
    assert '"ollama" takes no API key' in keyless.stderr


def test_ctrl_c_at_the_key_prompt_aborts_and_writes_nothing(agent: Path, home: Path) -> None:
    with PtyProcess(["login", "openai"], cwd=agent, env=clean_env(home)) as term:
        term.expect(KEY_PROMPT)
        term.send("sk-half\x03")
        assert term.wait() == 130
        assert "Aborted." in term.stderr
    assert not auth_file(agent).exists()


def test_logout(agent: Path, home: Path) -> None:
    auth = auth_file(agent)
    auth.parent.mkdir(mode=0o700)
    auth.write_text(json.dumps({p: {"type": "api_key", "key": f"k-{p}"} for p in ("openai", "groq")}))
    several = run(["logout"], cwd=agent, home=home)
    assert several.returncode == 2
    assert "several credentials are stored" in several.stderr and "(groq, openai)" in several.stderr
    done = run(["logout", "openai"], cwd=agent, home=home, OPENAI_API_KEY="sk-env")
    assert done.returncode == 0
    assert f"removed the openai credential from {auth}" in done.stderr
    assert "OPENAI_API_KEY is still set in the environment" in done.stderr
    assert stored(auth) == {"groq": "k-groq"}
    again = run(["logout", "openai"], cwd=agent, home=home)
    assert again.returncode == 1
    assert f'Error: no stored credential for "openai" in {auth} (stored: groq)' in again.stderr
    last = run(["logout"], cwd=agent, home=home)
    assert last.returncode == 0
    assert stored(auth) == {}
    empty = run(["logout"], cwd=agent, home=home)
    assert empty.returncode == 1
    assert f"no stored credentials in {auth}" in empty.stderr


def test_custom_models_json_provider_with_api_key(agent: Path, home: Path, server: KeyServer) -> None:
    custom = {
        "baseUrl": server.openai_base,
        "api": "openai-completions",
        "apiKey": "$VLLM_KEY",
        "models": [{"id": "qwen3-32b"}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"vllm": custom}}))
    with PtyProcess(["login", "vllm"], cwd=agent, env=clean_env(home)) as term:
        term.expect(r"vllm API key \(hidden")
        term.sendline("sk-good")
        assert term.wait() == 0
    assert stored(auth_file(agent)) == {"vllm": "sk-good"}
    listed = run(["login", "nope"], cwd=agent, home=home)
    assert "providers you can log in to: openai, anthropic, openai-codex" in listed.stderr
    assert "vllm" in listed.stderr


def _offline_proxy_env(home: Path) -> dict[str, str]:
    """Proxies on a port nothing listens on: a key check against the real provider fails here."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{sock.getsockname()[1]}"
    return clean_env(home, HTTPS_PROXY=proxy, HTTP_PROXY=proxy, ALL_PROXY=proxy, NO_PROXY="")


def test_the_readme_provider_switch_works_from_the_repo_root(
    tmp_path: Path, home: Path, server: KeyServer
) -> None:
    """`fastagent init demo`, then `fastagent login openai` from the same (non-agent) directory:
    the key lands in the global file, which the agent falls back to; `info` names that file."""
    root = tmp_path / "repo"
    root.mkdir()
    assert run(["init", "demo"], cwd=root, home=home).returncode == 0
    agent = root / "demo" / "fastagent"
    (agent / "models.json").write_text(json.dumps({"providers": {"openai": {"baseUrl": server.openai_base}}}))
    global_file = home / ".fastagent" / "auth.json"
    with PtyProcess(["login", "openai"], cwd=root, env=_offline_proxy_env(home)) as term:
        term.expect(KEY_PROMPT)
        term.sendline("sk-good")
        assert term.wait() == 0, term.stderr
        assert (
            f"no agent here: using the global credential file {global_file} "
            "(every agent reads it after its own .fastagent/auth.json)"
        ) in term.stderr
        assert f"OpenAI key saved to {global_file}" in term.stderr
    done = run(["invoke", "Hello!", "demo", "--model", "openai/gpt-4.1-mini"], cwd=root, home=home)
    assert (done.returncode, done.stdout) == (0, f"{ANSWER}\n"), done.stderr
    assert ("POST", "/v1/chat/completions") in [(m, p) for m, p, _ in server.requests]
    info = json.loads(
        run(["info", "demo", "--json", "--model", "openai/gpt-4.1-mini"], cwd=root, home=home).stdout
    )
    assert info["credentialSource"] == f"stored credential ({global_file})"
    assert info["credentialPath"] == str(global_file)
    text = run(["info", "demo", "--model", "openai/gpt-4.1-mini"], cwd=root, home=home).stdout
    assert f"key:          stored credential ({global_file})" in text


def test_login_takes_the_agent_directory_and_its_file_wins_over_the_global_one(
    tmp_path: Path, agent: Path, home: Path, server: KeyServer
) -> None:
    AuthStore(home / ".fastagent" / "auth.json").set_api_key("openai", "sk-global")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with PtyProcess(["login", "openai", str(agent)], cwd=elsewhere, env=clean_env(home)) as term:
        term.expect(KEY_PROMPT)
        term.sendline("sk-good")
        assert term.wait() == 0, term.stderr
        assert f"credential file of the agent {agent}: {auth_file(agent)}" in term.stderr
        assert f"OpenAI key verified and saved to {auth_file(agent)}" in term.stderr
    assert stored(auth_file(agent)) == {"openai": "sk-good"}
    info = json.loads(run(["info", str(agent), "--json"], cwd=elsewhere, home=home).stdout)
    assert info["credentialSource"] == f"stored credential ({auth_file(agent)})"
    out = run(["logout", str(agent)], cwd=elsewhere, home=home)  # one argument: it is the directory
    assert out.returncode == 0, out.stderr
    assert f"removed the openai credential from {auth_file(agent)}" in out.stderr
    info = json.loads(run(["info", str(agent), "--json"], cwd=elsewhere, home=home).stdout)
    assert info["credentialSource"] == f"stored credential ({home / '.fastagent' / 'auth.json'})"
