"""Shell completion: the scripts in completions/ are current, and Tab completes what a user expects."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from fastagent_cli.cli.completers import agent_dirs, model_specs, schedule_names, tool_names
from fastagent_cli.cli.completion_cmd import SHELLS, completion_script
from tests.conftest import RunCli, cli_command

ROOT = Path(__file__).resolve().parents[2]
FILES = {"bash": "fastagent.bash", "zsh": "_fastagent", "fish": "fastagent.fish"}


def test_completions_directory_is_current(run_cli: RunCli) -> None:
    for shell in SHELLS:
        done = run_cli("completion", shell)
        assert done.returncode == 0, done.stderr
        assert done.stdout == completion_script(shell)
        stale = "stale: run .venv/bin/python scripts/gen_completions.py"
        assert (ROOT / "completions" / FILES[shell]).read_text(encoding="utf-8") == done.stdout, stale
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_completions.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    assert run_cli("completion", "tcsh").returncode == 2


def _complete(shell: str, words: list[str], cwd: Path) -> list[str]:
    env = {**os.environ, "_FASTAGENT_COMPLETE": f"{shell}_complete"}
    if shell == "fish":  # fish passes the words before the cursor, then the incomplete word itself
        env["COMP_WORDS"] = " ".join(["fastagent", *words[:-1]])
        env["COMP_CWORD"] = words[-1]
    else:
        env["COMP_WORDS"] = " ".join(["fastagent", *words])
        env["COMP_CWORD"] = str(len(words))
    done = subprocess.run(
        [*cli_command(), *words], cwd=cwd, env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    agent = tmp_path / "shop" / "fastagent"
    (agent / "tools").mkdir(parents=True)
    (agent / "schedules").mkdir()
    (agent / "fastagent.toml").write_text('model = "scripted/echo"\ncoding_tools = ["read"]\n')
    (agent / "tools" / "lookup_order.py").write_text("")
    (agent / "schedules" / "daily.toml").write_text("")
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "vllm": {"baseUrl": "http://x/v1", "api": "openai-completions", "models": [{"id": "q"}]}
                }
            }
        )
    )
    (tmp_path / "notes").mkdir()
    return tmp_path


def test_zsh_and_fish_protocols(workspace: Path) -> None:
    zsh = _complete("zsh", ["de"], workspace)
    assert zsh[:3] == [
        "plain",
        "deploy",
        "Generate (and with --run, drive) a Docker, Fly.io or Railway deploy.",
    ]
    fish = _complete("fish", ["deploy", ""], workspace)
    assert fish == ["plain,docker", "plain,fly", "plain,railway"]
    assert _complete("fish", ["tool", ""], workspace / "shop") == ["plain,read", "plain,lookup_order"]
    specs = _complete("fish", ["invoke", "hi", "--model", "vllm/"], workspace / "shop")
    assert specs == ["plain,vllm/q"]
    assert _complete("fish", ["fire", "d"], workspace / "shop") == ["plain,daily"]
    assert _complete("fish", ["schedule", "history", ""], workspace / "shop") == ["plain,daily"]


def test_bash_script_end_to_end(workspace: Path, tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "fastagent").write_text(f'#!/bin/sh\nexec {sys.executable} -m fastagent_cli "$@"\n')
    (shim / "fastagent").chmod(0o755)
    script = f"""
source {ROOT / "completions" / "fastagent.bash"}
comp() {{
  COMP_WORDS=("$@"); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); COMPREPLY=()
  _fastagent_completion fastagent; echo "${{COMPREPLY[*]}}"
}}
comp fastagent co
comp fastagent start s
comp fastagent invoke hi shop --model scripted/echo:h
"""
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [bash, "-c", script], cwd=workspace, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.splitlines() == ["completion", "shop", "scripted/echo:high"], done.stderr


def _ctx(directory: str | None) -> click.Context:
    ctx = click.Context(click.Command("x"))
    if directory is not None:
        ctx.params["directory"] = directory
    return ctx


def test_completers_read_the_agent_directory(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workspace)
    param = click.Argument(["x"])
    items = agent_dirs(_ctx(None), param, "")
    assert [(i.value, i.help) for i in items] == [("shop", "workspace (agent: fastagent)")]
    assert [(i.value, i.help) for i in agent_dirs(_ctx(None), param, "shop/")] == [
        ("shop/fastagent", "agent")
    ]
    assert [i.type for i in agent_dirs(_ctx(None), param, "no")] == ["dir"]  # the shell completes directories
    assert [i.value for i in tool_names(_ctx("shop"), param, "")] == ["read", "lookup_order"]
    assert [i.value for i in schedule_names(_ctx("shop"), param, "d")] == ["daily"]
    assert "vllm/q" in [i.value for i in model_specs(_ctx("shop"), param, "")]
    assert [i.value for i in model_specs(_ctx("shop"), param, "vllm/q:of")] == ["vllm/q:off"]
    (workspace / "shop" / "fastagent" / "fastagent.toml").write_text("broken = [")
    assert [i.value for i in tool_names(_ctx("shop"), param, "")] == ["lookup_order"]  # no traceback
    assert tool_names(_ctx(str(workspace / "notes")), param, "") == []
