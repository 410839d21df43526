"""``fastagent deploy fly``: fly.toml, the runbook, and --run against a fake ``fly`` on PATH."""

from __future__ import annotations

import json
from pathlib import Path

from fastagent_cli.deploy.fly import app_name, parse_fly_toml
from tests.conftest import RunCli
from tests.deploy.conftest import HOOKED_CHANNEL, FakeClis, write_workspace

CONFIG = 'model = "openai/gpt-4.1-mini"\n'
SECRETS = {"OPENAI_API_KEY": "sk-fly-secret"}


def test_plan_runbook_in_order(tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis) -> None:
    ws = write_workspace(tmp_path / "My Agent", CONFIG)
    done = run_cli("deploy", "fly", str(ws), "--stop", env=SECRETS)
    assert done.returncode == 0, done.stderr
    commands = [line for line in done.stdout.splitlines() if line.startswith("fly ")]
    assert commands == [
        "fly apps create my-agent",
        "fly volumes create data --app my-agent --region iad --size 1",
        "fly secrets set --app my-agent OPENAI_API_KEY=<value>",
        "fly deploy . --app my-agent --config fastagent/fly.toml --dockerfile fastagent/Dockerfile",
    ]
    toml = (ws / "fastagent" / "fly.toml").read_text()
    assert 'auto_stop_machines = "stop"' in toml and "min_machines_running = 0" in toml
    assert fake_clis.calls() == []


def test_keep_running_and_no_scale_to_zero(tmp_path: Path, run_cli: RunCli) -> None:
    ws = write_workspace(tmp_path / "a", CONFIG + "self_schedule = true\n")
    assert run_cli("deploy", "fly", str(ws), env=SECRETS).returncode == 0
    assert "min_machines_running = 1         # self_schedule" in (ws / "fastagent/fly.toml").read_text()
    ws = write_workspace(tmp_path / "b", CONFIG)
    assert run_cli("deploy", "fly", str(ws), "--no-scale-to-zero", env=SECRETS).returncode == 0
    assert "min_machines_running = 1         # kept running" in (ws / "fastagent/fly.toml").read_text()


def test_a_kept_fly_toml_that_scales_to_zero_gates_run_even_with_force(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis
) -> None:
    files = {
        "fastagent/schedules/daily.toml": 'cron = "0 9 * * *"\nprompt = "x"\n',
        "fastagent/fly.toml": 'app = "mine"\nprimary_region = "fra"\n'
        "[http_service]\n  min_machines_running = 0\n",
    }
    ws = write_workspace(tmp_path / "ws", CONFIG, files)
    plan = run_cli("deploy", "fly", str(ws), "--force", env=SECRETS)
    assert plan.returncode == 0 and "[fastagent] app: mine (from fastagent/fly.toml)" in plan.stderr
    assert "warn: your kept fastagent/fly.toml scales to zero" in plan.stderr
    assert "fly volumes create data --app mine --region fra --size 1" in plan.stdout
    done = run_cli("deploy", "fly", str(ws), "--run", "--force", env=SECRETS)
    assert done.returncode == 1
    assert (
        "Error: deploy stopped: your kept fastagent/fly.toml scales to zero (min_machines_running = 0)"
        in (done.stderr)
    )
    assert fake_clis.calls() == []
    assert (ws / "fastagent/fly.toml").read_text().startswith('app = "mine"')  # never touched


def test_run_creates_what_is_missing_and_secrets_go_over_stdin(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis
) -> None:
    ws = write_workspace(tmp_path / "shop", CONFIG, {"fastagent/channels/github.py": HOOKED_CHANNEL})
    fake_clis.answer("fly", ["apps", "list"], "[]")
    fake_clis.answer("fly", ["volumes", "list"], "[]")
    env = {**SECRETS, "GITHUB_WEBHOOK_SECRET": "whsec-123", "HOOK_LOG": str(tmp_path / "hook")}
    done = run_cli("deploy", "fly", str(ws), "--run", env=env)
    assert done.returncode == 0, done.stderr
    assert fake_clis.argvs("fly") == [
        ["version"],
        ["auth", "whoami"],
        ["apps", "list", "--json"],
        ["apps", "create", "shop"],
        ["volumes", "list", "--app", "shop", "--json"],
        ["volumes", "create", "data", "--app", "shop", "--region", "iad", "--size", "1", "--yes"],
        ["secrets", "import", "--stage", "--app", "shop"],
        [
            "deploy", ".", "--app", "shop", "--config", "fastagent/fly.toml", "--dockerfile",
            "fastagent/Dockerfile", "--remote-only", "--yes", "--ha=false",
        ],
    ]  # fmt: skip
    imported = fake_clis.calls("fly")[6]["stdin"]
    assert imported == "OPENAI_API_KEY=sk-fly-secret\nGITHUB_WEBHOOK_SECRET=whsec-123\n"
    assert not any(
        "sk-fly-secret" in " ".join(a) or "whsec-123" in " ".join(a) for a in fake_clis.argvs("fly")
    )
    assert (tmp_path / "hook").read_text() == "https://shop.fly.dev"
    assert "[fastagent] deployed -> https://shop.fly.dev" in done.stderr
    assert "min_machines_running = 1         # github" in (ws / "fastagent/fly.toml").read_text()


def test_run_is_idempotent_and_stops_when_not_logged_in(
    tmp_path: Path, run_cli: RunCli, fake_clis: FakeClis
) -> None:
    ws = write_workspace(tmp_path / "shop", 'model = "scripted/echo"\n')
    fake_clis.answer("fly", ["apps", "list"], json.dumps([{"Name": "shop"}]))
    fake_clis.answer("fly", ["volumes", "list"], json.dumps([{"name": "data"}]))
    done = run_cli("deploy", "fly", str(ws), "--run")
    assert done.returncode == 0, done.stderr
    argvs = fake_clis.argvs("fly")
    assert ["apps", "create", "shop"] not in argvs and not any(a[:2] == ["volumes", "create"] for a in argvs)
    assert not any(a[:2] == ["secrets", "import"] for a in argvs)  # scripted/echo needs no secret
    assert "app shop exists, skipping create" in done.stderr
    fake_clis.answer("fly", ["auth", "whoami"], code=1)
    fake_clis.rules["fly"].insert(0, fake_clis.rules["fly"].pop())
    fake_clis.script_path.write_text(json.dumps(fake_clis.rules))
    stopped = run_cli("deploy", "fly", str(ws), "--run")
    assert stopped.returncode == 1 and "Error: deploy stopped: not logged in to Fly" in stopped.stderr


def test_names_and_parsing() -> None:
    assert app_name("9 lives") == "app-9-lives" and app_name("Shop_Bot") == "shop-bot"
    kept = "app = \"x\"\nprimary_region = 'fra'\n  min_machines_running = 2\n"
    assert parse_fly_toml(kept) == {"app": "x", "primary_region": "fra", "min_machines_running": "2"}
