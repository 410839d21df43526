"""Where machine state lives.

* state root: ``FASTAGENT_STATE_DIR`` > ``<agent dir>/.fastagent``
* sessions:   ``--sessions-dir`` > ``<state root>/sessions``

A leading ``~`` is expanded in every override; relative overrides resolve against the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["STATE_DIRNAME", "resolve_override", "resolve_sessions_dir", "resolve_state_root"]

STATE_DIRNAME = ".fastagent"


def resolve_override(value: str, base: Path) -> Path:
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else (base / path).resolve()


def resolve_state_root(
    agent_dir: Path, workspace: Path | None = None, env: Mapping[str, str] | None = None
) -> Path:
    environ = os.environ if env is None else env
    override = environ.get("FASTAGENT_STATE_DIR")
    if override:
        return resolve_override(override, workspace or agent_dir)
    return agent_dir / STATE_DIRNAME


def resolve_sessions_dir(state_root: Path, sessions_dir: str | None = None, base: Path | None = None) -> Path:
    if sessions_dir:
        return resolve_override(sessions_dir, base or state_root)
    return state_root / "sessions"
