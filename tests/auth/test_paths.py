"""Which credential file: --auth-path > FASTAGENT_AUTH_PATH > the agent's state root; outside any
agent the global ~/.fastagent/auth.json; not at the agent root: refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastagent_cli.assembly import login_target, open_agent_dir
from fastagent_cli.auth.paths import global_auth_path, resolve_auth_path
from fastagent_cli.errors import PlacementError


def make_agent(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "fastagent.toml").write_text('model = "scripted/echo"\n')
    return path


def test_global_path_follows_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert global_auth_path() == tmp_path / ".fastagent" / "auth.json"


def test_agent_root_uses_its_state_root(tmp_path: Path) -> None:
    agent = make_agent(tmp_path / "a")
    target = login_target(agent, env={})
    assert (target.path, target.source, target.is_global) == (
        agent / ".fastagent" / "auth.json",
        "agent",
        False,
    )
    assert target.models_json == agent / "models.json"


def test_workspace_with_one_agent_child_uses_that_agent(tmp_path: Path) -> None:
    agent = make_agent(tmp_path / "fastagent")
    assert login_target(tmp_path, env={}).path == agent / ".fastagent" / "auth.json"


def test_state_dir_override_moves_the_file(tmp_path: Path) -> None:
    agent = make_agent(tmp_path / "a")
    target = login_target(agent, env={"FASTAGENT_STATE_DIR": "state"})
    assert target.path == agent / "state" / "auth.json"


def test_env_and_flag_win_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent(tmp_path / "a")
    monkeypatch.chdir(tmp_path)
    env = {"FASTAGENT_AUTH_PATH": "shared/auth.json"}
    target = login_target(agent, env=env)
    assert (target.path, target.source) == (agent / "shared" / "auth.json", "FASTAGENT_AUTH_PATH")
    target = login_target(agent, "flag.json", env=env)
    assert (target.path, target.source) == (tmp_path / "flag.json", "--auth-path")


def test_outside_any_agent_is_global(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    empty = tmp_path / "empty"
    empty.mkdir()
    target = login_target(empty, env={})
    assert (target.path, target.source, target.placement) == (
        tmp_path / "home" / ".fastagent" / "auth.json",
        "global",
        None,
    )
    assert target.is_global and target.models_json is None
    explicit = login_target(empty, env={"FASTAGENT_AUTH_PATH": "/x/auth.json"})
    assert (explicit.path, explicit.source) == (Path("/x/auth.json"), "FASTAGENT_AUTH_PATH")


def test_inside_an_agent_but_not_at_its_root_refuses(tmp_path: Path) -> None:
    agent = make_agent(tmp_path / "a")
    deep = agent / "skills" / "x"
    deep.mkdir(parents=True)
    with pytest.raises(PlacementError, match=f"not at its root: cd {agent}"):
        login_target(deep, env={})


def test_several_agents_or_a_missing_named_agent_refuse(tmp_path: Path) -> None:
    make_agent(tmp_path / "one")
    make_agent(tmp_path / "two")
    with pytest.raises(PlacementError, match="several agents"):
        login_target(tmp_path, env={})
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PlacementError, match='FASTAGENT_AGENT="x" names no agent'):
        login_target(empty, env={"FASTAGENT_AGENT": "x"})


def test_assembly_uses_the_same_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent(tmp_path / "a")
    monkeypatch.delenv("FASTAGENT_AUTH_PATH", raising=False)
    monkeypatch.delenv("FASTAGENT_STATE_DIR", raising=False)
    opened = open_agent_dir(agent)
    assert opened.auth_path == login_target(agent).path == agent / ".fastagent" / "auth.json"
    monkeypatch.setenv("FASTAGENT_AUTH_PATH", "~/keys.json")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert open_agent_dir(agent).auth_path == tmp_path / "keys.json"
    assert resolve_auth_path(None, agent / ".fastagent", agent) == tmp_path / "keys.json"
