"""Run from below an agent: the CLI walks up to the nearest one, as git finds its repository."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import RunCli


def _init(run_cli: RunCli, where: Path, name: str = "bot") -> Path:
    done = run_cli("init", name, cwd=where)
    assert done.returncode == 0, done.stderr
    return where / name


def test_a_subdirectory_of_the_agent_finds_it_and_says_so(run_cli: RunCli, tmp_path: Path) -> None:
    bot = _init(run_cli, tmp_path)
    here = bot / "fastagent" / "tools"
    done = run_cli("info", "--json", cwd=here)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["agentDir"] == str((bot / "fastagent").resolve())
    assert doc["workspace"] == str(bot.resolve())  # init's layout: the same workspace as from bot/
    assert (
        f"[fastagent] agent: {(bot / 'fastagent').resolve()} (the nearest agent above this directory)"
        in done.stderr
    )

    turn = run_cli("invoke", "hi", cwd=here)
    assert turn.returncode == 0, turn.stderr
    assert "no agent" not in turn.stderr


def test_a_subdirectory_of_the_workspace_finds_its_agent(run_cli: RunCli, tmp_path: Path) -> None:
    bot = _init(run_cli, tmp_path)
    (bot / "docs" / "notes").mkdir(parents=True)
    done = run_cli("tool", "bash", '{"command": "pwd"}', cwd=bot / "docs" / "notes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(bot.resolve())  # the tool runs in the workspace, as from bot/
    assert f"agent: {(bot / 'fastagent').resolve()}" in done.stderr


def test_an_explicit_dir_below_an_agent_walks_up_too(run_cli: RunCli, tmp_path: Path) -> None:
    bot = _init(run_cli, tmp_path)
    done = run_cli("info", "--json", str(bot / "fastagent" / "skills"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["agentDir"] == str((bot / "fastagent").resolve())
    assert f"the nearest agent above {(bot / 'fastagent' / 'skills').resolve()}" in done.stderr


def test_the_walk_stops_at_the_repository_root(run_cli: RunCli, tmp_path: Path) -> None:
    _init(run_cli, tmp_path, "outer")
    repo = tmp_path / "outer" / "project"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    done = run_cli("info", cwd=repo / "src")
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == f"Error: no agent in {(repo / 'src').resolve()}: run `fastagent init` to create one"
    )


def test_a_sibling_agent_is_not_adopted(run_cli: RunCli, tmp_path: Path) -> None:
    run_cli("init", "--flat", "neighbour", cwd=tmp_path)
    (tmp_path / "fresh").mkdir()
    done = run_cli("info", cwd=tmp_path / "fresh")
    assert done.returncode == 1
    assert "no agent in" in done.stderr and "neighbour" not in done.stderr


def test_a_flat_agent_found_from_its_subdirectory(run_cli: RunCli, tmp_path: Path) -> None:
    done = run_cli("init", "--flat", "solo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    solo = (tmp_path / "solo").resolve()
    done = run_cli("info", "--json", cwd=solo / "skills")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["agentDir"] == doc["workspace"] == str(solo)
