"""Dynamic shell completion: what click asks for when a user presses Tab.

Each function is a click ``shell_complete`` callback ``(ctx, param, incomplete) -> items``. They
read the agent directory cheaply (no tool imports, no model, nothing written) and never raise: a
broken agent directory completes nothing rather than printing a traceback into the shell.

* :func:`agent_dirs`: directories under the typed prefix that are agents or workspaces holding
  one (labelled), falling back to the shell's own directory completion when none match;
* :func:`model_specs`: ``provider/model`` from the catalog and the agent's ``models.json``,
  ``scripted/echo`` and the agent's ``scripts/*.json``, then the ``:thinking`` levels once a spec
  is typed;
* :func:`tool_names`: the coding tools the config enables plus ``tools/*.py`` (file name = name);
* :func:`schedule_names`: ``schedules/*.toml``;
* :func:`session_ids`: the stored sessions' ids, from their file names.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from click.shell_completion import CompletionItem

__all__ = ["agent_dirs", "model_specs", "schedule_names", "session_ids", "tool_names"]

_CONFIG = "fastagent.toml"


def _directory(ctx: click.Context) -> str:
    value = ctx.params.get("directory")
    return value if isinstance(value, str) and value else "."


def _agent_dir(ctx: click.Context) -> Path | None:
    from fastagent_cli.definition.placement import resolve_placement

    try:
        return resolve_placement(_directory(ctx)).agent_dir
    except Exception:
        return None


def _stems(folder: Path, suffix: str) -> list[str]:
    try:
        return sorted(
            p.name[: -len(suffix)]
            for p in folder.iterdir()
            if p.name.endswith(suffix) and not p.name.startswith((".", "_")) and p.is_file()
        )
    except OSError:
        return []


def agent_dirs(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    expanded = os.path.expanduser(incomplete)
    parent, _, stem = expanded.rpartition("/")
    base = Path(parent or ".") if parent or not expanded.startswith("/") else Path("/")
    shown = incomplete[: len(incomplete) - len(stem)]
    items: list[CompletionItem] = []
    try:
        children = sorted(base.iterdir())
    except OSError:
        children = []
    for child in children:
        if not child.name.startswith(stem) or (child.name.startswith(".") and not stem.startswith(".")):
            continue
        label = _agent_label(child)
        if label is not None:
            items.append(CompletionItem(shown + child.name, help=label))
    return items or [CompletionItem(incomplete, type="dir")]


def _agent_label(path: Path) -> str | None:
    try:
        if not path.is_dir():
            return None
        if (path / _CONFIG).is_file():
            return "agent"
        agents = [c.name for c in path.iterdir() if c.is_dir() and (c / _CONFIG).is_file()]
    except OSError:
        return None
    return f"workspace (agent: {', '.join(sorted(agents))})" if agents else None


def model_specs(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from fastagent_cli.models.registry import ModelRegistry
    from fastagent_cli.models.types import THINKING_LEVELS

    agent_dir = _agent_dir(ctx)
    try:
        registry = ModelRegistry(agent_dir / "models.json" if agent_dir else None)
    except Exception:
        registry = ModelRegistry()
    specs = [*registry.specs(), "scripted/echo"]
    if agent_dir is not None:  # the agent's offline scripts: scripts/<name>.json -> scripted/<name>
        specs += [f"scripted/{n}" for s in (".json", ".jsonl") for n in _stems(agent_dir / "scripts", s)]
    head, colon, _ = incomplete.rpartition(":")
    if colon and head in specs:
        levels = [f"{head}:{level}" for level in THINKING_LEVELS]
        return [CompletionItem(spec) for spec in levels if spec.startswith(incomplete)]
    return [CompletionItem(spec) for spec in specs if spec.startswith(incomplete)]


def tool_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from fastagent_cli.definition.config import load_config

    agent_dir = _agent_dir(ctx)
    if agent_dir is None:
        return []
    names: list[str] = []
    try:
        names.extend(load_config(agent_dir / _CONFIG).coding_tool_names)
    except Exception:
        pass
    names.extend(n for n in _stems(agent_dir / "tools", ".py") if n not in names)
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


def schedule_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    agent_dir = _agent_dir(ctx)
    if agent_dir is None:
        return []
    return [CompletionItem(n) for n in _stems(agent_dir / "schedules", ".toml") if n.startswith(incomplete)]


def session_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from fastagent_cli.assembly import stored_session_ids

    sessions_dir = ctx.params.get("sessions_dir")
    try:
        ids = stored_session_ids(_directory(ctx), sessions_dir if isinstance(sessions_dir, str) else None)
    except Exception:
        return []
    return [CompletionItem(i) for i in ids if i.startswith(incomplete)]
