"""``FASTAGENT_STATE_DIR`` names a place the operator chose: it is created (0700) when read, and
one that cannot be created fails the command at once, naming the variable and the path (not every
turn with ``cannot write the session store``)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from fastagent_cli.errors import ConfigError
from fastagent_cli.state.paths import resolve_state_root
from tests.conftest import AgentFactory, RunCli

UNCREATABLE = "/proc/fastagent-nope/state"  # /proc takes no new directories, even from root


def test_the_override_is_created_private(tmp_path: Path) -> None:
    root = resolve_state_root(tmp_path, env={"FASTAGENT_STATE_DIR": str(tmp_path / "a" / "state")})
    assert root.is_dir() and stat.S_IMODE(root.stat().st_mode) == 0o700


def test_an_override_that_cannot_be_created_names_the_variable_and_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_state_root(tmp_path, env={"FASTAGENT_STATE_DIR": UNCREATABLE})
    assert info.value.message == (
        f"FASTAGENT_STATE_DIR={UNCREATABLE}: cannot create the state directory {UNCREATABLE}: "
        "no such file or directory"
    )


def test_invoke_fails_at_once_with_one_line(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    done = run_cli("invoke", "hi", str(agent), env={"FASTAGENT_STATE_DIR": UNCREATABLE})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == (
        f"Error: FASTAGENT_STATE_DIR={UNCREATABLE}: cannot create the state directory {UNCREATABLE}: "
        "no such file or directory"
    )
    assert "Traceback" not in done.stderr
