"""``fastagent deploy railway``: railway.json, the runbook, and --run against a fake ``railway``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import RunCli
from tests.deploy.conftest import FakeClis, write_workspace

CONFIG = 'model = "openai/gpt-4.1-mini"\n\n[deploy]\nsecrets = ["GH_TOKEN"]\n'
SECRETS = {"OPENAI_API_KEY": "sk-rw-secret", "GH_TOKEN": "ghp-rw-secret"}


def test_plan(tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis) -> None:
    ws = write_workspace(tmp_path / "ws", "self_schedule = true\n" + CONFIG)
    done = run_cli("deploy", "railway", str(ws), env=SECRETS)
    assert done.returncode == 0, done.stderr
    commands = [
        line.split("  #")[0].strip() for line in done.stdout.splitlines() if line.startswith("railway ")
    ]
    assert commands == [
        "railway init",
        "railway add --service ws",
        "railway volume add --mount-path /data",
        "railway variables set FASTAGENT_STATE_DIR=/data/.state "
        "RAILWAY_DOCKERFILE_PATH=/fastagent/Dockerfile",
        "railway variables set OPENAI_API_KEY=<value> GH_TOKEN=<value>",
        "railway up",
    ]
    assert "do NOT enable App Sleeping: self_schedule wake-ups have no external wake-up" in done.stdout
    doc = json.loads((ws / "fastagent" / "railway.json").read_text())
    assert doc["build"] == {"builder": "DOCKERFILE", "dockerfilePath": "fastagent/Dockerfile"}
    assert doc["deploy"] == {"healthcheckPath": "/health", "restartPolicyType": "ON_FAILURE"}
    assert fake_clis.calls() == []


def test_run_on_an_unlinked_directory(tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis) -> None:
    ws = write_workspace(tmp_path / "ws", CONFIG)
    fake_clis.answer(
        "railway", ["domain"], json.dumps({"domains": [{"domain": "ws-production.up.railway.app"}]})
    )
    done = run_cli("deploy", "railway", str(ws), "--run", env=SECRETS)
    assert done.returncode == 0, done.stderr
    svc = ["--service", "ws"]
    assert fake_clis.argvs("railway") == [
        ["--version"],
        ["whoami"],
        ["status", "--json"],
        ["init", "--name", "ws"],
        ["add", "--service", "ws"],
        [
            "variables",
            "set",
            "FASTAGENT_STATE_DIR=/data/.state",
            "RAILWAY_DOCKERFILE_PATH=/fastagent/Dockerfile",
            *svc,
        ],
        ["variables", "set", "OPENAI_API_KEY", "--stdin", *svc],
        ["variables", "set", "GH_TOKEN", "--stdin", *svc],
        ["volume", "list", "--json"],
        ["volume", "add", "--mount-path", "/data"],
        ["up", "--ci", *svc],
        ["domain", "--json", *svc],
    ]
    stdins = [c["stdin"] for c in fake_clis.calls("railway")[6:8]]
    assert stdins == ["sk-rw-secret", "ghp-rw-secret"]
    assert not any(v in " ".join(a) for v in SECRETS.values() for a in fake_clis.argvs("railway"))
    assert "[fastagent] deployed -> https://ws-production.up.railway.app" in done.stderr


def test_a_linked_directory_needs_into_linked(tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis) -> None:
    ws = write_workspace(tmp_path / "ws", CONFIG)
    fake_clis.answer("railway", ["status"], json.dumps({"name": "prod"}))
    fake_clis.answer("railway", ["volume", "list"], json.dumps([{"mountPath": "/data"}]))
    fake_clis.answer("railway", ["domain"], "https://ws.up.railway.app\n")
    refused = run_cli("deploy", "railway", str(ws), "--run", env=SECRETS)
    assert refused.returncode == 1
    assert "Error: deploy stopped: this directory is already linked to a Railway project" in refused.stderr
    assert not any(a[0] in ("init", "variables", "up") for a in fake_clis.argvs("railway"))
    done = run_cli("deploy", "railway", str(ws), "--run", "--into-linked", env=SECRETS)
    assert done.returncode == 0, done.stderr
    argvs = fake_clis.argvs("railway")
    assert ["init", "--name", "ws"] not in argvs and ["volume", "add", "--mount-path", "/data"] not in argvs
    assert "volume at /data exists, skipping" in done.stderr


def test_tunnel_is_docker_only_and_flags_of_other_hosts_warn(tmp_path: Path, run_cli: RunCli) -> None:
    ws = write_workspace(tmp_path / "ws", CONFIG)
    done = run_cli("deploy", "railway", str(ws), "--tunnel", env=SECRETS)
    assert (
        done.returncode == 2 and done.stderr == "Error: --tunnel works only with `fastagent deploy docker`\n"
    )
    done = run_cli("deploy", "railway", str(ws), "--stop", env=SECRETS)
    assert "warn: --stop and --no-scale-to-zero are for fly; ignored for railway" in done.stderr
    assert run_cli("deploy", "heroku", str(ws)).returncode == 2
