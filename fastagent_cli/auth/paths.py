"""Which credential file a command reads, and which one ``login`` / ``logout`` write.

The agent's credential file is the first of:

1. ``--auth-path <file>``            (relative to the current directory)
2. ``FASTAGENT_AUTH_PATH``            (relative to the workspace; the agent's ``.env`` may set it)
3. ``<state root>/auth.json``         (``FASTAGENT_STATE_DIR`` > ``<agent dir>/.fastagent``)

After it, :func:`~fastagent_cli.models.credentials.resolve_credential` reads the global file
``~/.fastagent/auth.json`` (:func:`global_auth_path`), then the provider's environment variables
(``.env`` included). ``login`` / ``logout`` act on the agent's file; outside any agent, on the
global file; inside an agent but not at its root they refuse, naming the root.

Reading the directory (placement, ``.env``, the state root) is assembly's job
(:func:`fastagent_cli.assembly.locate_agent`); this module only applies the order to what it read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from fastagent_cli.definition.config import CONFIG_NAME
from fastagent_cli.definition.placement import Placement
from fastagent_cli.state.paths import STATE_DIRNAME, resolve_override

__all__ = [
    "AUTH_FILENAME",
    "AgentRoots",
    "AuthTarget",
    "global_auth_path",
    "outside_any_agent",
    "resolve_auth_path",
    "resolve_auth_target",
]

AUTH_FILENAME = "auth.json"
AUTH_PATH_ENV = "FASTAGENT_AUTH_PATH"


def global_auth_path() -> Path:
    """``~/.fastagent/auth.json`` (``Path.home()``, so ``HOME`` moves it)."""
    return Path.home() / STATE_DIRNAME / AUTH_FILENAME


def resolve_auth_path(
    flag: str | None, state_root: Path, workspace: Path, env: Mapping[str, str] | None = None
) -> Path:
    """The credential file of an opened agent: ``--auth-path`` > ``FASTAGENT_AUTH_PATH`` > state root."""
    environ = os.environ if env is None else env
    if flag:
        return resolve_override(flag, Path.cwd())
    override = environ.get(AUTH_PATH_ENV)
    if override:
        return resolve_override(override, workspace)
    return state_root / AUTH_FILENAME


@dataclass(frozen=True, slots=True)
class AuthTarget:
    """Where ``login`` / ``logout`` act. ``placement`` is ``None`` outside any agent."""

    path: Path
    source: str
    """``--auth-path``, ``FASTAGENT_AUTH_PATH``, ``agent`` or ``global``."""
    placement: Placement | None

    @property
    def is_global(self) -> bool:
        return self.source == "global"

    @property
    def models_json(self) -> Path | None:
        return None if self.placement is None else self.placement.agent_dir / "models.json"


class AgentRoots(Protocol):
    """What the credential order needs of a located agent (assembly's ``AgentLocation``)."""

    @property
    def placement(self) -> Placement: ...

    @property
    def state_root(self) -> Path: ...


def resolve_auth_target(
    agent: AgentRoots | None,
    directory: str | os.PathLike[str] = ".",
    flag: str | None = None,
    env: Mapping[str, str] | None = None,
) -> AuthTarget:
    """The credential file for ``login``/``logout`` run in ``directory``.

    ``agent`` is the agent located there (its ``.env`` already applied), or ``None`` outside any
    agent: then it is the global file (unless ``--auth-path``/``FASTAGENT_AUTH_PATH`` names another).
    """
    environ = os.environ if env is None else env
    if agent is not None:
        workspace, state_root = agent.placement.workspace, agent.state_root
    else:
        workspace = Path(os.path.expanduser(os.fspath(directory))).resolve()
        state_root = global_auth_path().parent
    path = resolve_auth_path(flag, state_root, workspace, environ)
    if flag:
        source = "--auth-path"
    elif environ.get(AUTH_PATH_ENV):
        source = AUTH_PATH_ENV
    else:
        source = "agent" if agent is not None else "global"
    return AuthTarget(path, source, agent.placement if agent is not None else None)


def outside_any_agent(directory: Path, env: Mapping[str, str]) -> bool:
    """No agent at, above or directly below ``directory`` (and none asserted by FASTAGENT_AGENT)."""
    if env.get("FASTAGENT_AGENT") or not directory.is_dir():
        return False
    here = directory.resolve()
    if any((p / CONFIG_NAME).is_file() for p in (here, *here.parents)):
        return False
    try:
        children = [c for c in here.iterdir() if c.is_dir() and not c.name.startswith(".")]
    except OSError:
        return False
    return not any((c / CONFIG_NAME).is_file() for c in children)
