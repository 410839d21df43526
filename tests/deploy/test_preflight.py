"""The host-neutral gates: a warning in plan mode, ``Error: deploy stopped: ...`` (exit 1) under --run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.deploy.conftest import LONG_CHANNEL, ROUTE_CHANNEL, FakeClis, write_workspace

MODEL = 'model = "openai/gpt-4.1-mini"\n'
KEY = {"OPENAI_API_KEY": "sk-x"}


def _last_error(stderr: str) -> str:
    return [line for line in stderr.splitlines() if line.startswith("Error:")][-1]


@pytest.mark.parametrize("host", ["docker", "fly", "railway"])
def test_the_model_must_come_from_the_config(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis, host: str
) -> None:
    ws = write_workspace(tmp_path / "ws", "")
    plan = run_cli("deploy", host, str(ws), "--no-input")
    assert plan.returncode == 0
    assert (
        "[fastagent] warn: no model in fastagent.toml, so the deployed box cannot resolve one" in plan.stderr
    )
    done = run_cli("deploy", host, str(ws), "--run", "--model", "openai/gpt-4.1", env=KEY)
    assert done.returncode == 1
    assert _last_error(done.stderr) == (
        'Error: deploy stopped: model "openai/gpt-4.1" is set by --model or FASTAGENT_MODEL (or .env), '
        "not in fastagent.toml, so it will not reach the deployed box: "
        'add model = "openai/gpt-4.1" to fastagent.toml'
    )
    assert fake_clis.calls() == []


def test_an_unresolvable_model_gates_and_a_local_override_is_named(tmp_path: Path, run_cli: RunCli) -> None:
    ws = write_workspace(tmp_path / "ws", 'model = "nosuch/model"\n')
    done = run_cli("deploy", "docker", str(ws), "--run")
    assert done.returncode == 1
    assert 'the model in fastagent.toml ("nosuch/model") cannot be resolved' in done.stderr
    (ws / "fastagent" / "fastagent.toml").write_text(MODEL)
    plan = run_cli("deploy", "docker", str(ws), "--model", "scripted/echo", env=KEY)
    assert 'note: the deployed box uses fastagent.toml\'s model "openai/gpt-4.1-mini"' in plan.stderr


def test_no_model_credential_gates_run(tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis) -> None:
    ws = write_workspace(tmp_path / "ws", MODEL)
    fake_clis.answer("docker", ["compose", "version"], "Docker Compose version v2.29.1\n")
    plan = run_cli("deploy", "docker", str(ws))
    assert (
        "# Model auth: none found here: set OPENAI_API_KEY (or run `fastagent login openai <agent dir>`) "
        "before --run." in plan.stdout
    )
    done = run_cli("deploy", "docker", str(ws), "--run")
    assert _last_error(done.stderr).startswith(
        "Error: deploy stopped: no model credential: set OPENAI_API_KEY (or run `fastagent login openai "
        "<agent dir>`) (a variable goes in .env or the environment), then re-run"
    )


def test_a_login_only_in_the_global_file_gates_run_and_says_why(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis, isolated_env: Path
) -> None:
    """`fastagent login openai` run outside the agent makes invoke work here (the global file),
    but deploy cannot carry that file: it says so instead of "run fastagent login" again."""
    global_file = isolated_env / ".fastagent" / "auth.json"
    global_file.parent.mkdir(mode=0o700)
    global_file.write_text(json.dumps({"openai": {"type": "api_key", "key": "sk-global"}}))
    ws = write_workspace(tmp_path / "ws", MODEL)
    fake_clis.answer("docker", ["compose", "version"], "Docker Compose version v2.29.1\n")
    plan = run_cli("deploy", "docker", str(ws))
    assert f"# Model auth: only in {global_file} here, which deploy does not carry" in plan.stdout
    done = run_cli("deploy", "docker", str(ws), "--run")
    assert _last_error(done.stderr).startswith(
        f"Error: deploy stopped: the model credential is only in {global_file}, which deploy does not "
        "carry (it holds this machine's logins for every agent): store one for this agent with "
        "`fastagent login <provider> <agent dir>`"
    )


def test_a_kept_dockerignore_that_ships_secrets_or_drops_the_agent(tmp_path: Path, run_cli: RunCli) -> None:
    files = {
        ".dockerignore": ".env\n",
        "fastagent/.env": "OPENAI_API_KEY=sk-x\n",
        ".env": "A=1\n",
        "fastagent/.fastagent/auth.json": "{}",
    }
    ws = write_workspace(tmp_path / "ws", MODEL, files)
    plan = run_cli("deploy", "docker", str(ws))
    assert plan.returncode == 0
    assert (
        "warn: your .dockerignore (kept) does not exclude `fastagent/.fastagent/auth.json`, "
        "`fastagent/.env`: the build context would BAKE SECRETS INTO THE IMAGE. "
        "Add `/fastagent/.fastagent/auth.json` and `/fastagent/.env` to it before deploying." in plan.stderr
    )
    assert (ws / ".dockerignore").read_text() == ".env\n"  # the user's file is kept
    done = run_cli("deploy", "docker", str(ws), "--run")
    assert done.returncode == 1 and "BAKE SECRETS INTO THE IMAGE" in _last_error(done.stderr)
    (ws / ".dockerignore").write_text("fastagent/\n**/.env\n")
    done = run_cli("deploy", "fly", str(ws), "--run")
    assert _last_error(done.stderr).startswith(
        "Error: deploy stopped: your .dockerignore (kept) excludes `fastagent`: the build context would ship "
        "WITHOUT the agent"
    )


def test_our_own_stale_dockerignore_is_checked_unless_forced(tmp_path: Path, run_cli: RunCli) -> None:
    ws = write_workspace(tmp_path / "ws", MODEL, {"fastagent/.env": "X=1\n"})
    assert run_cli("deploy", "docker", str(ws), env=KEY).returncode == 0
    generated = (ws / ".dockerignore").read_text()
    (ws / ".dockerignore").write_text(generated.replace("**/.env\n", ""))
    plan = run_cli("deploy", "docker", str(ws), env=KEY)
    assert "BAKE SECRETS INTO THE IMAGE. Re-run with --force to regenerate it." in plan.stderr
    forced = run_cli("deploy", "docker", str(ws), "--force", env=KEY)
    assert "BAKE SECRETS" not in forced.stderr and (ws / ".dockerignore").read_text() == generated


def test_bind_host_session_control_and_custom_channels(tmp_path: Path, run_cli: RunCli) -> None:
    config = MODEL + 'session_control = true\n\n[http]\nhost = "127.0.0.1"\n'
    files = {
        "fastagent/channels/hooks.py": ROUTE_CHANNEL % "hooks",
        "fastagent/channels/socket.py": LONG_CHANNEL,
    }
    ws = write_workspace(tmp_path / "ws", config, files)
    plan = run_cli("deploy", "docker", str(ws), env=KEY)
    assert (
        'note: fastagent.toml sets [http] host = "127.0.0.1"; the image passes --bind 0.0.0.0' in plan.stderr
    )
    assert "warn: session_control = true: the deployed box serves /control/* at its public URL" in plan.stderr
    assert 'note: route channel "hooks" is custom' in plan.stderr
    assert 'note: long-connection channel "socket" is custom' in plan.stderr
    assert "note: keep one machine running: long connection (socket) cannot wake from zero" in plan.stderr
    (ws / "fastagent" / "Dockerfile").write_text(
        'FROM python:3.12-slim\nCMD ["fastagent", "start", "/app"]\n'
    )
    done = run_cli("deploy", "docker", str(ws), "--run", env=KEY)
    assert _last_error(done.stderr).startswith(
        'Error: deploy stopped: fastagent.toml sets [http] host = "127.0.0.1" and your Dockerfile (kept) '
        "does not pass --bind"
    )


def test_a_kept_dockerfile_must_bind_beyond_loopback(tmp_path: Path, run_cli: RunCli) -> None:
    ws = write_workspace(tmp_path / "ws", MODEL, {})
    (ws / "fastagent" / "Dockerfile").write_text(
        'FROM python:3.12-slim\nCMD ["fastagent", "start", "/app"]\n'
    )
    done = run_cli("deploy", "docker", str(ws), "--run", env=KEY)
    assert _last_error(done.stderr).startswith(
        "Error: deploy stopped: your Dockerfile (kept) does not pass --bind, and fastagent start binds "
        "127.0.0.1 by default"
    )


def test_a_broken_channel_file_is_one_error(tmp_path: Path, run_cli: RunCli) -> None:
    ws = write_workspace(
        tmp_path / "ws", MODEL, {"fastagent/channels/bad.py": "raise RuntimeError('boom')\n"}
    )
    done = run_cli("deploy", "docker", str(ws), env=KEY)
    assert done.returncode == 1
    assert done.stderr == (
        "Error: cannot inspect channel modules: channels/bad.py: cannot load: RuntimeError: boom\n"
    )
