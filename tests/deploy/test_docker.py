"""``fastagent deploy docker``: plan mode, and --run against a fake ``docker`` on PATH."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastagent_cli.deploy.docker import project_name
from tests.conftest import RunCli
from tests.deploy.conftest import HOOKED_CHANNEL, LONG_CHANNEL, FakeClis, write_workspace

CONFIG = 'model = "openai/gpt-4.1-mini"\n\n[deploy]\nsecrets = ["GH_TOKEN"]\n'
SECRETS = {"OPENAI_API_KEY": "sk-model-secret-1", "GH_TOKEN": "ghp-secret-2"}


def _answer_healthy(fake: FakeClis, port: int, services: str = "agent\n") -> None:
    fake.answer("docker", ["compose", "version"], "Docker Compose version v2.29.1\n")
    fake.answer("docker", ["compose", "-f", "fastagent/fastagent.compose.yml", "config"], services)
    fake.answer("docker", ["compose", "-f", "fastagent/fastagent.compose.yml", "ps"], services)
    fake.answer("docker", ["compose", "-f", "fastagent/fastagent.compose.yml", "port"], f"0.0.0.0:{port}\n")


def test_plan_writes_artifacts_prints_the_runbook_and_starts_nothing(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis
) -> None:
    ws = write_workspace(tmp_path / "ws", CONFIG)
    done = run_cli("deploy", "docker", str(ws), env=SECRETS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Run the agent in local Docker.")
    assert "docker compose -f fastagent/fastagent.compose.yml up -d --build" in done.stdout
    assert "#   OPENAI_API_KEY: your model provider key" in done.stdout and "#   GH_TOKEN:" in done.stdout
    assert "[fastagent] wrote fastagent/Dockerfile" in done.stderr and "[fastagent]" not in done.stdout
    assert fake_clis.calls() == []  # plan mode never runs docker
    for value in SECRETS.values():  # values never land in a file
        assert all(value.encode() not in p.read_bytes() for p in ws.rglob("*") if p.is_file())


def test_run_builds_waits_for_health_and_keeps_secrets_off_argv(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis, health_server: int
) -> None:
    ws = write_workspace(tmp_path / "ws", CONFIG)
    _answer_healthy(fake_clis, health_server)
    done = run_cli("deploy", "docker", str(ws), "--run", env=SECRETS)
    assert done.returncode == 0, done.stderr
    compose = ["compose", "-f", "fastagent/fastagent.compose.yml"]
    assert fake_clis.argvs("docker") == [
        ["compose", "version"],
        ["info"],
        [*compose, "config", "--services"],
        [*compose, "up", "-d", "--build"],
        [*compose, "ps", "--status", "running", "--services"],
        [*compose, "port", "agent", "8787"],
    ]
    up = fake_clis.calls("docker")[3]
    assert up["env"]["OPENAI_API_KEY"] == "sk-model-secret-1" and up["env"]["GH_TOKEN"] == "ghp-secret-2"
    for call in fake_clis.calls():
        assert not any(v in " ".join(call["argv"]) for v in SECRETS.values())
    assert {c["cwd"] for c in fake_clis.calls()} == {str(ws.resolve())}  # the workspace is the context
    assert f"[fastagent] running -> http://127.0.0.1:{health_server}" in done.stderr
    assert done.stdout == ""


def test_run_gates_before_any_side_effect(tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis) -> None:
    ws = write_workspace(tmp_path / "ws", CONFIG)
    _answer_healthy(fake_clis, 1)
    missing = run_cli("deploy", "docker", str(ws), "--run", env={"OPENAI_API_KEY": "sk-x"})
    assert missing.returncode == 1
    assert missing.stderr.splitlines()[-1] == (
        "Error: deploy stopped: no local value for: GH_TOKEN: "
        "set them in .env (or the environment) and re-run"
    )
    assert fake_clis.argvs("docker") == [["compose", "version"]]


def test_run_without_docker_daemon_or_new_enough_compose(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = write_workspace(tmp_path / "ws", CONFIG)
    fake_clis.answer("docker", ["info"], code=1)
    fake_clis.answer("docker", ["compose", "version"], "Docker Compose version v2.29.1\n")
    done = run_cli("deploy", "docker", str(ws), "--run", env=SECRETS)
    assert "Error: deploy stopped: the Docker daemon is unavailable" in done.stderr and done.returncode == 1
    fake_clis.rules.clear()
    fake_clis.answer("docker", ["compose", "version"], "Docker Compose version v2.1.0\n")
    done = run_cli("deploy", "docker", str(ws), "--run", env=SECRETS)
    assert "Error: deploy stopped: Docker Compose 2.1.0 is too old: deploy needs >= 2.3.3" in done.stderr
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    done = run_cli("deploy", "docker", str(ws), "--run", env={**SECRETS, "PATH": str(empty)})
    assert "Error: deploy stopped: Docker CLI not found" in done.stderr and done.returncode == 1


def test_run_stops_when_health_never_answers(tmp_path: Path, fake_clis: FakeClis) -> None:
    from fastagent_cli.deploy.docker import run_docker
    from fastagent_cli.deploy.facts import gather
    from fastagent_cli.deploy.runner import CliRunner
    from fastagent_cli.errors import DeployError

    ws = write_workspace(tmp_path / "ws", 'model = "scripted/echo"\n')
    _answer_healthy(fake_clis, 9)  # nothing listens on port 9
    facts = gather(str(ws), model_flag=None, auth_flag=None)
    with pytest.raises(DeployError, match=r"did not answer http://127.0.0.1:9/health within 0.6 s"):
        run_docker(facts, CliRunner("docker", ws), lambda _: None, require_tunnel=False, health_timeout=0.6)


def test_tunnel_run_reads_the_url_and_registers_webhooks(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis, health_server: int
) -> None:
    github = (
        "from fastagent_cli.channels import github_channel\n\nchannel = github_channel(on=lambda e: [])\n"
    )
    files = {
        "fastagent/channels/hooky.py": HOOKED_CHANNEL,
        "fastagent/channels/socket.py": LONG_CHANNEL,
        "fastagent/channels/github.py": github,
    }
    ws = write_workspace(tmp_path / "ws", 'model = "scripted/echo"\n', files)
    _answer_healthy(fake_clis, health_server, "agent\ntunnel\n")
    logs = "tunnel-1  | INF +----+\ntunnel-1  | INF |  https://quiet-river-42.trycloudflare.com  |\n"
    fake_clis.answer("docker", ["compose", "-f", "fastagent/fastagent.compose.yml", "logs"], logs)
    hook_log = tmp_path / "hook.txt"
    env = {"HOOK_LOG": str(hook_log), "GITHUB_WEBHOOK_SECRET": "s"}
    done = run_cli("deploy", "docker", str(ws), "--tunnel", "--run", env=env)
    assert done.returncode == 0, done.stderr
    assert "tunnel:" in (ws / "fastagent" / "fastagent.compose.yml").read_text()
    assert [
        "compose",
        "-f",
        "fastagent/fastagent.compose.yml",
        "rm",
        "-s",
        "-f",
        "tunnel",
    ] in fake_clis.argvs("docker")
    assert hook_log.read_text() == "https://quiet-river-42.trycloudflare.com"
    assert "[fastagent] hooky: webhook registered" in done.stderr
    assert "[fastagent] socket: long connection, no webhook to register" in done.stderr
    payload = "Payload URL https://quiet-river-42.trycloudflare.com/webhook, content type application/json"
    assert payload in done.stderr
    assert "[fastagent] github: webhook manual" in done.stderr
    failed = run_cli("deploy", "docker", str(ws), "--run", env={**env, "HOOK_OUTCOME": "failed"})
    assert failed.returncode == 1
    assert (
        "Error: deploy stopped: webhook registration failed for: hooky; the app itself deployed"
        in failed.stderr
    )


def test_kept_compose_without_tunnel_gates_tunnel_run(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis
) -> None:
    ws = write_workspace(tmp_path / "ws", 'model = "scripted/echo"\n')
    assert run_cli("deploy", "docker", str(ws)).returncode == 0
    plan = run_cli("deploy", "docker", str(ws), "--tunnel")
    assert (
        'warn: --tunnel was requested but the kept fastagent/fastagent.compose.yml has no "tunnel"'
        in plan.stderr
    )
    _answer_healthy(fake_clis, 1)
    done = run_cli("deploy", "docker", str(ws), "--tunnel", "--run")
    assert done.returncode == 1 and 'has no "tunnel" service' in done.stderr
    assert run_cli("deploy", "docker", str(ws), "--tunnel", "--force").returncode == 0
    assert "tunnel:" in (ws / "fastagent" / "fastagent.compose.yml").read_text()


def test_stored_credential_travels_as_auth_seed(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis, health_server: int
) -> None:
    import base64

    ws = write_workspace(tmp_path / "ws", 'model = "openai/gpt-4.1-mini"\n')
    auth = ws / "fastagent" / ".fastagent" / "auth.json"
    auth.parent.mkdir()
    auth.write_text(json.dumps({"openai": {"type": "api_key", "key": "sk-stored"}}))
    _answer_healthy(fake_clis, health_server)
    done = run_cli("deploy", "docker", str(ws), "--run")
    assert done.returncode == 0, done.stderr
    up = fake_clis.calls("docker")[3]
    assert json.loads(base64.b64decode(up["env"]["FASTAGENT_AUTH_SEED"])) == json.loads(auth.read_text())
    assert "OPENAI_API_KEY" not in (ws / "fastagent" / "fastagent.compose.yml").read_text()


def test_a_subscription_login_travels_and_its_absence_gates(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis, health_server: int
) -> None:
    """openai-codex names no environment variable: only its login in auth.json can authenticate it."""
    import base64

    ws = write_workspace(tmp_path / "ws", 'model = "openai-codex/gpt-5.4"\n')
    _answer_healthy(fake_clis, health_server)
    gated = run_cli("deploy", "docker", str(ws), "--run")
    assert gated.returncode == 1 and "no model credential" in gated.stderr
    assert not [c for c in fake_clis.calls("docker") if "up" in c["argv"]]
    auth = ws / "fastagent" / ".fastagent" / "auth.json"
    auth.parent.mkdir()
    login = {"type": "oauth", "refresh": "rt", "access": "at", "expires": 1, "accountId": "acct"}
    auth.write_text(json.dumps({"openai-codex": login}))
    done = run_cli("deploy", "docker", str(ws), "--run", "--force")
    assert done.returncode == 0, done.stderr
    (up,) = [c for c in fake_clis.calls("docker") if "up" in c["argv"]]
    assert json.loads(base64.b64decode(up["env"]["FASTAGENT_AUTH_SEED"])) == {"openai-codex": login}


def test_project_name() -> None:
    assert project_name("My Shop!") == "fastagent-my-shop"
    assert project_name("__") == "fastagent-agent"
