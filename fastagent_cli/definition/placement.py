"""Which directory is the agent, and which is the workspace.

The directory you point at is the workspace. It is the agent if it holds ``fastagent.toml``;
otherwise exactly one direct child holding one is the agent (one level down, never upward).
``FASTAGENT_AGENT=<name>`` asserts which child (a missing name refuses, even with one agent);
among several, the child named ``fastagent`` wins; otherwise placement refuses and lists them.
Every refusal is one line that says what to do.

:func:`find_agent_above` is how a command run from below an agent finds it, the way git finds its
repository: the nearest ancestor that is an agent, or that holds its agent in ``fastagent/``
(``init``'s layout), stopping at the repository root (a directory holding ``.git``) or the
filesystem root. Inside ``init``'s layout (``<workspace>/fastagent/...``) the workspace is
``<workspace>``, as when the command runs there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli.definition.config import CONFIG_NAME
from fastagent_cli.errors import PlacementError

__all__ = [
    "CONTAINED_DIRS",
    "DEFAULT_AGENT_DIRNAME",
    "FoundAgent",
    "Placement",
    "display_name",
    "find_agent_above",
    "resolve_placement",
]

DEFAULT_AGENT_DIRNAME = "fastagent"
CONTAINED_DIRS = ("skills", "tools", "channels", "schedules")


@dataclass(frozen=True, slots=True)
class Placement:
    agent_dir: Path
    workspace: Path
    config_path: Path
    hint: str | None = None


def _is_agent(path: Path) -> bool:
    return (path / CONFIG_NAME).is_file()


def _enclosing_agent(start: Path) -> Path | None:
    for parent in start.parents:
        if _is_agent(parent):
            return parent
    return None


@dataclass(frozen=True, slots=True)
class FoundAgent:
    """Where a walk up from ``start`` led: the directory to read (``target``) and its agent."""

    target: Path
    agent_dir: Path


def _holds_agent(path: Path) -> bool:
    """``path`` is an agent, or holds one directly below it (what placement would look at)."""
    if _is_agent(path):
        return True
    try:
        return any(c.is_dir() and not c.name.startswith(".") and _is_agent(c) for c in path.iterdir())
    except OSError:
        return False


def find_agent_above(
    directory: str | os.PathLike[str], env: Mapping[str, str] | None = None
) -> FoundAgent | None:
    """The nearest agent above ``directory`` when ``directory`` itself holds none (``None`` when
    it does, when it is not a directory, or when no ancestor up to the repository root holds one)."""
    environ = os.environ if env is None else env
    wanted = environ.get("FASTAGENT_AGENT") or None
    start = Path(os.path.expanduser(os.fspath(directory)))
    if not start.is_dir():
        return None
    start = start.resolve()
    if _holds_agent(start) or (start / ".git").exists():
        return None
    nested = wanted or DEFAULT_AGENT_DIRNAME
    for parent in start.parents:
        repo_root = (parent / ".git").exists()
        if _is_agent(parent):
            workspace = parent.parent
            if parent.name == nested and not repo_root and workspace != parent and not _is_agent(workspace):
                return FoundAgent(workspace, parent)  # init's layout: <workspace>/fastagent/
            return FoundAgent(parent, parent)
        if _is_agent(parent / nested):
            return FoundAgent(parent, parent / nested)
        if repo_root:
            return None
    return None


def display_name(placement: Placement, configured: str | None = None) -> str:
    """What the agent is called where it is shown: ``name`` in ``fastagent.toml``, else the
    workspace's name for ``init``'s ``<workspace>/fastagent/`` layout, else the agent directory's."""
    if configured:
        return configured
    agent_dir, workspace = placement.agent_dir, placement.workspace
    if agent_dir != workspace and agent_dir.name == DEFAULT_AGENT_DIRNAME and workspace.name:
        return workspace.name
    return agent_dir.name


def _hint(agent_dir: Path) -> str | None:
    parent = agent_dir.parent
    if parent == agent_dir:
        return None
    marks = [name for name in ("AGENTS.md", ".git") if (parent / name).exists()]
    if not marks:
        return None
    return (
        f"hint: {parent} has {' and '.join(marks)}; to make it the workspace (where tools run and whose "
        f"AGENTS.md is context), point fastagent at {parent} with this agent as ./{agent_dir.name}/"
    )


def check_containment(agent_dir: Path) -> None:
    root = agent_dir.resolve()
    for name in CONTAINED_DIRS:
        path = agent_dir / name
        if path.is_symlink():
            target = path.resolve()
            if target != root and root not in target.parents:
                raise PlacementError(
                    f"{path} is a symlink to {target}, outside the agent dir {root}: refused "
                    "(copy the files in instead)"
                )


def resolve_placement(directory: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Placement:
    environ = os.environ if env is None else env
    raw = Path(os.path.expanduser(os.fspath(directory)))
    if not raw.exists():
        raise PlacementError(f"no such directory: {raw}")
    if not raw.is_dir():
        raise PlacementError(f"not a directory: {raw}")
    workspace = raw.resolve()
    wanted = environ.get("FASTAGENT_AGENT") or None
    if _is_agent(workspace) and (wanted is None or wanted == workspace.name):
        check_containment(workspace)
        return Placement(workspace, workspace, workspace / CONFIG_NAME, _hint(workspace))
    try:
        children = sorted(
            child for child in workspace.iterdir() if child.is_dir() and not child.name.startswith(".")
        )
    except OSError as exc:
        raise PlacementError(f"cannot read {workspace}: {exc.strerror or exc}") from None
    agents = [child for child in children if _is_agent(child)]
    names = ", ".join(a.name for a in agents)
    if wanted is not None:
        chosen = next((a for a in agents if a.name == wanted), None)
        if chosen is None:
            here = ([f"{workspace.name} (this directory)"] if _is_agent(workspace) else []) + [
                a.name for a in agents
            ]
            listing = f" (agents here: {', '.join(here)})" if here else " (there are no agents here)"
            raise PlacementError(
                f'FASTAGENT_AGENT="{wanted}" names no agent in {workspace}{listing}: '
                "set it to one of them, or unset it"
            )
    elif len(agents) == 1:
        chosen = agents[0]
    elif agents:
        chosen = next((a for a in agents if a.name == DEFAULT_AGENT_DIRNAME), None)
        if chosen is None:
            raise PlacementError(
                f"several agents in {workspace}: {names}; pick one with FASTAGENT_AGENT=<name>"
            )
    else:
        enclosing = _enclosing_agent(workspace)
        if enclosing is not None:
            raise PlacementError(
                f"{workspace} is inside the agent at {enclosing}, not at its root: "
                f"cd {enclosing} (or point fastagent there)"
            )
        raise PlacementError(f"no agent in {workspace}: run `fastagent init` to create one")
    check_containment(chosen)
    return Placement(chosen, workspace, chosen / CONFIG_NAME, None)
