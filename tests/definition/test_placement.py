"""Placement refusals and precedence, run as a user would: the real ``fastagent`` process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fastagent_cli.definition.placement import resolve_placement
from fastagent_cli.errors import PlacementError
from tests.conftest import RunCli


def _agent(path: Path, model: str = "scripted/echo") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "fastagent.toml").write_text(f'model = "{model}"\n')
    return path


def _info(run_cli: RunCli, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> dict:  # type: ignore[type-arg]
    done = run_cli("info", *args, "--json", env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _refused(run_cli: RunCli, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = run_cli(*args, env=env, cwd=cwd)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    return lines[0]


def test_the_directory_itself_is_the_agent(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path / "flat")
    doc = _info(run_cli, str(agent))
    assert doc["agentDir"] == doc["workspace"] == str(agent.resolve())


def test_one_child_is_the_agent_and_the_parent_the_workspace(tmp_path: Path, run_cli: RunCli) -> None:
    _agent(tmp_path / "repo" / "helper")
    doc = _info(run_cli, str(tmp_path / "repo"))
    assert doc["agentDir"] == str((tmp_path / "repo/helper").resolve())
    assert doc["workspace"] == str((tmp_path / "repo").resolve())


def test_default_directory_is_the_current_one(tmp_path: Path, run_cli: RunCli) -> None:
    _agent(tmp_path / "repo" / "fastagent")
    doc = _info(run_cli, cwd=tmp_path / "repo")
    assert doc["workspace"] == str((tmp_path / "repo").resolve())


def test_several_agents_the_one_named_fastagent_wins(tmp_path: Path, run_cli: RunCli) -> None:
    _agent(tmp_path / "repo" / "alpha")
    _agent(tmp_path / "repo" / "fastagent")
    assert _info(run_cli, str(tmp_path / "repo"))["agentDir"].endswith("/repo/fastagent")


def test_several_agents_without_a_default_refuse_and_list_them(tmp_path: Path, run_cli: RunCli) -> None:
    _agent(tmp_path / "repo" / "alpha")
    _agent(tmp_path / "repo" / "beta")
    line = _refused(run_cli, "info", str(tmp_path / "repo"))
    assert "several agents in" in line and "alpha, beta" in line
    assert "pick one with FASTAGENT_AGENT=<name>" in line


def test_fastagent_agent_asserts_the_child(tmp_path: Path, run_cli: RunCli) -> None:
    _agent(tmp_path / "repo" / "alpha")
    _agent(tmp_path / "repo" / "fastagent")
    doc = _info(run_cli, str(tmp_path / "repo"), env={"FASTAGENT_AGENT": "alpha"})
    assert doc["agentDir"].endswith("/repo/alpha")  # the assertion beats the default name


def test_fastagent_agent_naming_no_agent_refuses_even_with_one(tmp_path: Path, run_cli: RunCli) -> None:
    _agent(tmp_path / "repo" / "only")
    line = _refused(run_cli, "info", str(tmp_path / "repo"), env={"FASTAGENT_AGENT": "other"})
    assert 'FASTAGENT_AGENT="other" names no agent in' in line and "(agents here: only)" in line


def test_fastagent_agent_in_dotenv_has_no_effect(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path / "repo" / "alpha")
    (agent / ".env").write_text("FASTAGENT_AGENT=beta\n")
    _agent(tmp_path / "repo" / "fastagent")
    assert _info(run_cli, str(tmp_path / "repo"))["agentDir"].endswith("/repo/fastagent")


def test_no_agent_says_run_init(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "empty").mkdir()
    line = _refused(run_cli, "info", str(tmp_path / "empty"))
    assert "no agent in" in line and "run `fastagent init`" in line


def test_inside_an_agent_but_not_at_its_root_walks_up_to_it(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path / "flat")
    (agent / "skills" / "x").mkdir(parents=True)
    done = run_cli("invoke", "hi", str(agent / "skills" / "x"))
    assert done.returncode == 0, done.stderr
    assert f"[fastagent] agent: {agent.resolve()} (the nearest agent above" in done.stderr


def test_the_library_still_refuses_below_an_agent(tmp_path: Path) -> None:
    agent = _agent(tmp_path / "flat")
    (agent / "skills" / "x").mkdir(parents=True)
    with pytest.raises(PlacementError, match="is inside the agent at .*, not at its root"):
        resolve_placement(agent / "skills" / "x", {})  # the CLI walks up; the library says where to point


def test_never_walks_upward_or_two_levels_down(tmp_path: Path, run_cli: RunCli) -> None:
    _agent(tmp_path / "a" / "b" / "deep")
    line = _refused(run_cli, "info", str(tmp_path / "a"))
    assert "no agent in" in line


def test_missing_directory(tmp_path: Path, run_cli: RunCli) -> None:
    line = _refused(run_cli, "info", str(tmp_path / "nope"))
    assert line == f"Error: no such directory: {tmp_path / 'nope'}"


def test_hint_when_the_parent_looks_like_the_workspace(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    agent = _agent(tmp_path / "repo" / "bot")
    doc = _info(run_cli, str(agent))
    assert doc["hint"].startswith(f"{(tmp_path / 'repo').resolve()} has .git;")
    text = run_cli("info", str(agent)).stdout
    assert "hint:" in text and "point fastagent at" in text
    assert _info(run_cli, str(tmp_path / "repo"))["hint"] is None  # pointed at the parent: no hint


def test_symlinked_surface_outside_the_agent_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path / "flat")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", agent / "tools")
    line = _refused(run_cli, "info", str(agent))
    assert "tools is a symlink to" in line and "outside the agent dir" in line
    inside = agent / "shared"
    inside.mkdir()
    (agent / "tools").unlink()
    os.symlink(inside, agent / "skills")  # inside the agent dir: fine
    assert resolve_placement(agent).agent_dir == agent.resolve()
