"""``fastagent init``: scaffold an agent that runs at once, all or nothing.

Default placement is ``<dir>/fastagent/`` (``--agent-dir NAME`` picks another name): the files are
written into a hidden staging directory next to it and renamed into place in one step. ``--flat``
adopts ``<dir>`` itself: existing files are kept (never overwritten), an existing ``.gitignore``
gets the missing ``.fastagent/`` / ``.env`` lines appended, and a failure removes exactly what this
run created. Refused before anything is written: a directory that already holds an agent, a
target inside another agent's loaded surface, a non-empty ``--agent-dir`` target, and a path in
the way that is not a directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from fastagent_cli.definition.config import CONFIG_NAME
from fastagent_cli.definition.placement import DEFAULT_AGENT_DIRNAME
from fastagent_cli.errors import ConfigError, UsageError

__all__ = ["DEMO_MODEL", "GITIGNORE_LINES", "ScaffoldResult", "missing_ignores", "scaffold", "template_files"]

GITIGNORE_LINES = (".fastagent/", ".env")
DEMO_MODEL = "scripted/demo"
"""The model a new agent starts on: it replays ``scripts/demo.json``, so it answers with no key."""
_LOADED_SURFACE = ("skills", "tools", "channels", "schedules", "scripts", ".fastagent")
_TEMPLATES = {
    "persona.md": "persona.md",
    "skills/writing-great-skills/SKILL.md": "skills/writing-great-skills/SKILL.md",
    "tools/fetch_url.py": "tools/fetch_url.py",
    "scripts/demo.json": "scripts/demo.json",
    CONFIG_NAME: CONFIG_NAME,
    ".gitignore": "gitignore",
    ".env.example": "env.example",
}


@dataclass(slots=True)
class ScaffoldResult:
    agent_dir: Path
    workspace: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    patched: list[str] = field(default_factory=list)


def _template(name: str) -> str:
    return (resources.files("fastagent_cli") / "data" / "templates" / name).read_text(encoding="utf-8")


def template_files(
    *, minimal: bool = False, model: str | None = None, name: str | None = None
) -> dict[str, str]:
    """The files of a new agent, by path relative to the agent dir (``name``: written as the
    agent's name, the directory the user named)."""
    files = {rel: _template(src) for rel, src in _TEMPLATES.items()}
    if name:
        files[CONFIG_NAME] = files[CONFIG_NAME].replace(
            '# name = "my-agent"', f"name = {json.dumps(name)}", 1
        )
    if minimal:
        del files["tools/fetch_url.py"]
    if model:
        files[CONFIG_NAME] = files[CONFIG_NAME].replace(f'model = "{DEMO_MODEL}"', f'model = "{model}"', 1)
    return files


def _holds_agent(directory: Path) -> Path | None:
    if (directory / CONFIG_NAME).is_file():
        return directory / CONFIG_NAME
    try:
        children = sorted(directory.iterdir())
    except OSError:
        return None
    return next((c / CONFIG_NAME for c in children if c.is_dir() and (c / CONFIG_NAME).is_file()), None)


def _preflight(workspace: Path, agent_dir: Path, flat: bool, files: dict[str, str]) -> None:
    if workspace.exists() and not workspace.is_dir():
        raise ConfigError(f"{workspace} exists and is not a directory")
    existing = _holds_agent(workspace) if workspace.is_dir() else None
    if existing is not None:
        raise ConfigError(
            f"{workspace} already holds an agent ({existing}): run `fastagent info {workspace}` to see "
            "it, or init another directory"
        )
    for parent in workspace.resolve().parents:
        if (parent / CONFIG_NAME).is_file():
            head = workspace.resolve().relative_to(parent).parts[0]
            if head in _LOADED_SURFACE:
                raise ConfigError(
                    f"{workspace} is inside the agent at {parent} ({head}/ is part of its definition): "
                    "init somewhere else"
                )
            break
    if not flat:
        if agent_dir.exists() and not agent_dir.is_dir():
            raise ConfigError(f"{agent_dir} exists and is not a directory: remove it, or pick --agent-dir")
        if agent_dir.is_dir() and any(agent_dir.iterdir()):
            raise ConfigError(
                f"{agent_dir} already exists and is not empty: pick another name with --agent-dir, "
                "or use --flat to make the directory itself the agent"
            )
        return
    for rel in files:
        for parent in Path(rel).parents:
            if str(parent) != "." and (workspace / parent).exists() and not (workspace / parent).is_dir():
                raise ConfigError(f"{workspace / parent} exists and is not a directory: remove it first")


Writer = Callable[[Path, str], None]


def _write_new(path: Path, text: str) -> None:
    with open(path, "x", encoding="utf-8") as fh:
        fh.write(text)


def scaffold(
    directory: str | os.PathLike[str],
    *,
    agent_dirname: str | None = None,
    flat: bool = False,
    minimal: bool = False,
    model: str | None = None,
    write: Writer = _write_new,
) -> ScaffoldResult:
    workspace = Path(os.path.expanduser(os.fspath(directory)))
    name = agent_dirname or DEFAULT_AGENT_DIRNAME
    if name in (".", "./"):
        flat = True
    elif "/" in name or "\\" in name or name in ("..", "") or name.startswith("."):
        raise UsageError(f"--agent-dir takes a plain directory name, not {name!r}")
    agent_dir = workspace if flat else workspace / name
    shown = workspace.resolve().name
    valid = bool(shown.strip()) and len(shown) <= 64 and shown.isprintable()
    files = template_files(minimal=minimal, model=model, name=shown if valid else None)
    _preflight(workspace, agent_dir, flat, files)
    made = _make_dirs(workspace)
    try:
        if flat:
            result = _scaffold_flat(workspace, files, write)
        else:
            result = _scaffold_staged(workspace, agent_dir, files, write)
    except BaseException:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return result


def _make_dirs(path: Path) -> list[Path]:
    """``mkdir -p`` that returns what it created (outermost first)."""
    missing = [p for p in [*reversed(path.parents), path] if not p.exists()]
    for p in missing:
        p.mkdir()
    return missing


def _scaffold_staged(
    workspace: Path, agent_dir: Path, files: dict[str, str], write: Writer
) -> ScaffoldResult:
    stage = workspace / f".{agent_dir.name}.init-{secrets.token_hex(4)}"
    stage.mkdir()
    try:
        for rel, text in files.items():
            target = stage / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            write(target, text)
        if agent_dir.is_dir():
            agent_dir.rmdir()  # empty (checked): rename replaces it
        os.rename(stage, agent_dir)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return ScaffoldResult(agent_dir, workspace, created=list(files))


def _scaffold_flat(workspace: Path, files: dict[str, str], write: Writer) -> ScaffoldResult:
    result = ScaffoldResult(workspace, workspace)
    created: list[Path] = []
    made: list[Path] = []
    patched: tuple[Path, int] | None = None
    try:
        for rel, text in files.items():
            target = workspace / rel
            if target.exists():
                result.kept.append(rel)
                continue
            made += _make_dirs(target.parent)
            write(target, text)
            created.append(target)
            result.created.append(rel)
        gitignore = workspace / ".gitignore"
        if ".gitignore" in result.kept:
            missing = missing_ignores(gitignore)
            if missing:
                patched = (gitignore, gitignore.stat().st_size)
                with open(gitignore, "a", encoding="utf-8") as fh:
                    fh.write("\n# fastagent\n" + "\n".join(missing) + "\n")
                result.patched.append(".gitignore")
    except BaseException:
        for path in reversed(created):
            with contextlib.suppress(OSError):
                path.unlink()
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir()
        if patched is not None:
            with contextlib.suppress(OSError), open(patched[0], "r+b") as fh:
                fh.truncate(patched[1])
        raise
    return result


def missing_ignores(path: Path) -> list[str]:
    try:
        lines = {line.strip() for line in path.read_text(encoding="utf-8").splitlines()}
    except (OSError, UnicodeDecodeError):
        return list(GITIGNORE_LINES)
    present = {line.rstrip("/").lstrip("/") for line in lines}
    return [entry for entry in GITIGNORE_LINES if entry.rstrip("/") not in present]
