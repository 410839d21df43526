"""Prompt inputs read from files: ``persona.md`` (segment 1) and project context (segment 2).

Project context follows pi's ``loadProjectContextFiles``: the agent dir's own ``AGENTS.md`` (or
``CLAUDE.md``) first, then, for every directory from the filesystem root down to the workspace,
the first of ``AGENTS.md`` / ``CLAUDE.md`` that exists, so the file nearest the workspace comes
last. A path is used once. An unreadable context file is skipped with a warning (pi's rule); an
unreadable ``persona.md`` is an error, since the agent would otherwise silently change identity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli.errors import ConfigError

__all__ = [
    "CONTEXT_NAMES",
    "PERSONA_FILE",
    "ContextFile",
    "context_candidates",
    "load_context_files",
    "read_persona",
]

CONTEXT_NAMES = ("AGENTS.md", "CLAUDE.md")
PERSONA_FILE = "persona.md"


@dataclass(frozen=True, slots=True)
class ContextFile:
    path: Path
    content: str


def _walk_down(workspace: Path) -> list[Path]:
    """The directories from the filesystem root down to ``workspace``."""
    return [*reversed(workspace.parents), workspace]


def context_candidates(agent_dir: Path, workspace: Path) -> list[tuple[Path, ...]]:
    """Per directory, in prompt order, the candidate files (first existing one wins)."""
    dirs = [agent_dir, *(d for d in _walk_down(workspace) if d != agent_dir)]
    return [tuple(d / name for name in CONTEXT_NAMES) for d in dirs]


def load_context_files(
    agent_dir: Path, workspace: Path, warn: Callable[[str], None] | None = None
) -> list[ContextFile]:
    files: list[ContextFile] = []
    seen: set[Path] = set()
    for candidates in context_candidates(agent_dir, workspace):
        for path in candidates:
            if not path.is_file():
                continue
            if path in seen:
                break
            seen.add(path)
            try:
                content = path.read_bytes().decode("utf-8", errors="replace")
            except OSError as exc:
                if warn is not None:
                    warn(f"cannot read context file {path}: {exc.strerror or exc} (skipped)")
                continue
            files.append(ContextFile(path, content))
            break
    return files


def read_persona(agent_dir: Path) -> str | None:
    """``persona.md`` stripped, or ``None`` when it is absent or blank."""
    path = agent_dir / PERSONA_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    return text.strip() or None
