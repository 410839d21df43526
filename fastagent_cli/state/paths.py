"""Where machine state lives.

* state root: ``FASTAGENT_STATE_DIR`` > ``<agent dir>/.fastagent``
* sessions:   ``--sessions-dir`` > ``FASTAGENT_SESSIONS_DIR`` > ``<state root>/sessions``

A leading ``~`` is expanded in every override; relative overrides resolve against the workspace.
A path that cannot be a directory (it, or a parent, is a file) is a ConfigError naming the setting.
``FASTAGENT_STATE_DIR`` names a place the operator chose: it is created (0700) when it is read, so
one that cannot be created fails the command at once, naming the variable and the path, instead of
every turn failing with ``cannot write the session store``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from fastagent_cli.errors import ConfigError
from fastagent_cli.state.atomic import make_private_dir

__all__ = [
    "SESSIONS_DIR_ENV",
    "STATE_DIRNAME",
    "check_directory",
    "resolve_override",
    "resolve_sessions_dir",
    "resolve_state_root",
]

STATE_DIRNAME = ".fastagent"
SESSIONS_DIR_ENV = "FASTAGENT_SESSIONS_DIR"


def resolve_override(value: str, base: Path) -> Path:
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else (base / path).resolve()


def resolve_state_root(
    agent_dir: Path, workspace: Path | None = None, env: Mapping[str, str] | None = None
) -> Path:
    environ = os.environ if env is None else env
    override = environ.get("FASTAGENT_STATE_DIR")
    if override:
        setting = f"FASTAGENT_STATE_DIR={override}"
        root = check_directory(resolve_override(override, workspace or agent_dir), setting)
        try:
            make_private_dir(root)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ConfigError(
                f"{setting}: cannot create the state directory {root}: {reason.lower()}"
            ) from None
        return root
    return check_directory(agent_dir / STATE_DIRNAME, "the state directory")


def resolve_sessions_dir(
    state_root: Path,
    sessions_dir: str | None = None,
    base: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    if sessions_dir:
        return check_directory(
            resolve_override(sessions_dir, base or state_root), f"--sessions-dir {sessions_dir}"
        )
    override = (os.environ if env is None else env).get(SESSIONS_DIR_ENV)
    if override:
        return check_directory(
            resolve_override(override, base or state_root), f"{SESSIONS_DIR_ENV}={override}"
        )
    return check_directory(state_root / "sessions", "the sessions directory")


def check_directory(path: Path, setting: str) -> Path:
    """``path`` when it is, or can be created as, a directory; ConfigError naming ``setting``."""
    current = path
    while True:
        try:
            mode = current.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            if current.parent == current:
                return path
            current = current.parent
            continue
        except OSError as exc:
            raise ConfigError(f"{setting}: cannot use {current}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(mode):
            return path
        raise ConfigError(f"{setting}: {current} is not a directory")
