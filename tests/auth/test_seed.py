"""FASTAGENT_AUTH_SEED: written by ``start`` only when the auth file does not exist."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest

from fastagent_cli.auth.seed import seed_auth_file
from fastagent_cli.errors import CredentialError
from tests.conftest import AgentFactory, RunCli

DOC = {"openai": {"type": "api_key", "key": "sk-seeded"}}
SEED = base64.b64encode(json.dumps(DOC).encode()).decode()


def test_the_seed_is_written_once_and_never_over_a_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "auth.json"
    assert seed_auth_file(path, {"FASTAGENT_AUTH_SEED": SEED})
    assert json.loads(path.read_text()) == DOC
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    path.write_text(json.dumps({"openai": {"type": "api_key", "key": "sk-refreshed-on-the-box"}}))
    assert not seed_auth_file(path, {"FASTAGENT_AUTH_SEED": SEED})
    assert "sk-refreshed-on-the-box" in path.read_text()
    assert not seed_auth_file(tmp_path / "other.json", {})


def test_a_malformed_seed_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(
        CredentialError, match="FASTAGENT_AUTH_SEED is not the base64 of a JSON credential file"
    ):
        seed_auth_file(tmp_path / "a.json", {"FASTAGENT_AUTH_SEED": "not base64!"})
    with pytest.raises(CredentialError, match="must hold a JSON object"):
        seed_auth_file(tmp_path / "a.json", {"FASTAGENT_AUTH_SEED": base64.b64encode(b"[1]").decode()})
    assert not (tmp_path / "a.json").exists()


def test_start_seeds_the_state_root_it_serves_from(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    agent = make_agent(model=None)
    state = tmp_path / "volume" / ".state"
    done = run_cli(
        "start",
        str(agent),
        "--no-input",
        env={"FASTAGENT_AUTH_SEED": SEED, "FASTAGENT_STATE_DIR": str(state)},
    )
    assert done.returncode == 1 and "missing model" in done.stderr  # it stopped after seeding
    assert json.loads((state / "auth.json").read_text()) == DOC
