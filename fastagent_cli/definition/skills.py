"""Skills: ``skills/<name>/SKILL.md`` with Agent Skills frontmatter, validated as pi does.

Discovery (pi's ``loadSkillsFromDir`` rules, sorted for determinism): a directory holding
``SKILL.md`` is a skill root and is not searched further; other subdirectories are searched;
names starting with ``.`` and ``node_modules`` are skipped; symlinks are followed. Only the
definition's own ``skills/`` is read at run time.

Validation reports pi's diagnostics (``name "x" does not match parent directory "y"``,
``name exceeds 64 characters (n)``, ``name contains invalid characters (must be lowercase a-z,
0-9, hyphens only)``, ``name must not start or end with a hyphen``, ``name must not contain
consecutive hyphens``, ``description is required``, ``description exceeds 1024 characters (n)``,
or the YAML/read error). The skill still loads unless its description is missing or the file
cannot be parsed. When two skills share a name, the first (in path order) wins and the other is
reported as a collision.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fastagent_cli.definition.frontmatter import FrontmatterError, parse_frontmatter

__all__ = [
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "SKILL_FILE",
    "Skill",
    "SkillCollision",
    "SkillDiagnostic",
    "SkillSet",
    "format_skills_for_prompt",
    "load_skill_file",
    "load_skills",
    "validate_name",
]

SKILL_FILE = "SKILL.md"
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    file_path: Path
    disable_model_invocation: bool = False

    @property
    def base_dir(self) -> Path:
        return self.file_path.parent


@dataclass(frozen=True, slots=True)
class SkillDiagnostic:
    type: Literal["warning"]
    message: str
    path: str


@dataclass(frozen=True, slots=True)
class SkillCollision:
    name: str
    winner_path: str
    loser_path: str

    @property
    def message(self) -> str:
        return f'name "{self.name}" collision'


@dataclass(slots=True)
class SkillSet:
    skills: list[Skill] = field(default_factory=list)
    diagnostics: list[SkillDiagnostic] = field(default_factory=list)
    collisions: list[SkillCollision] = field(default_factory=list)
    consulted: list[Path] = field(default_factory=list)
    """Every directory listed and file read: what a freshness check must stat."""


def validate_name(name: str, parent_dir: str | None = None) -> list[str]:
    errors: list[str] = []
    if parent_dir is not None and name != parent_dir:
        errors.append(f'name "{name}" does not match parent directory "{parent_dir}"')
    if len(name) > MAX_NAME_LENGTH:
        errors.append(f"name exceeds {MAX_NAME_LENGTH} characters ({len(name)})")
    if not re.fullmatch(r"[a-z0-9-]+", name):
        errors.append("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)")
    if name.startswith("-") or name.endswith("-"):
        errors.append("name must not start or end with a hyphen")
    if "--" in name:
        errors.append("name must not contain consecutive hyphens")
    return errors


def _validate_description(description: object) -> list[str]:
    if not isinstance(description, str) or not description.strip():
        return ["description is required"]
    if len(description) > MAX_DESCRIPTION_LENGTH:
        return [f"description exceeds {MAX_DESCRIPTION_LENGTH} characters ({len(description)})"]
    return []


def load_skill_file(path: Path) -> tuple[Skill | None, list[SkillDiagnostic]]:
    """Read and validate one ``SKILL.md``; the skill is ``None`` when it cannot load."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        frontmatter, _body = parse_frontmatter(text)
    except (OSError, UnicodeDecodeError, FrontmatterError) as exc:
        message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, [SkillDiagnostic("warning", message or "failed to parse skill file", where)]
    description = frontmatter.get("description")
    diagnostics = [SkillDiagnostic("warning", m, where) for m in _validate_description(description)]
    raw_name = frontmatter.get("name")
    parent = path.parent.name
    name = str(raw_name) if raw_name not in (None, "") else parent
    diagnostics += [SkillDiagnostic("warning", m, where) for m in validate_name(name, parent)]
    if not isinstance(description, str) or not description.strip():
        return None, diagnostics
    disabled = frontmatter.get("disable-model-invocation") is True
    return Skill(name, description, path, disabled), diagnostics


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks; a broken one is not a directory
    except OSError:
        return False


def _scan(directory: Path, found: SkillSet) -> list[Path]:
    found.consulted.append(directory)
    entries = _entries(directory)
    for entry in entries:
        if entry.name == SKILL_FILE and not _is_dir(entry):
            path = directory / SKILL_FILE
            found.consulted.append(path)
            return [path]
    files: list[Path] = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "node_modules" or not _is_dir(entry):
            continue
        files.extend(_scan(directory / entry.name, found))
    return files


def load_skills(skills_dir: Path) -> SkillSet:
    """Every skill under ``skills_dir`` (absent directory: none), first name wins."""
    found = SkillSet()
    if not skills_dir.is_dir():
        found.consulted.append(skills_dir)
        return found
    found.consulted.append(skills_dir)
    files: list[Path] = []
    for entry in _entries(skills_dir):
        if entry.name.startswith(".") or entry.name == "node_modules" or not _is_dir(entry):
            continue
        files.extend(_scan(skills_dir / entry.name, found))
    by_name: dict[str, Skill] = {}
    seen_real: set[str] = set()
    for path in files:
        skill, diagnostics = load_skill_file(path)
        found.diagnostics.extend(diagnostics)
        if skill is None:
            continue
        real = os.path.realpath(path)
        if real in seen_real:
            continue  # the same file reached through a symlink
        winner = by_name.get(skill.name)
        if winner is not None:
            found.collisions.append(SkillCollision(skill.name, str(winner.file_path), str(path)))
            continue
        by_name[skill.name] = skill
        seen_real.add(real)
    found.skills = list(by_name.values())
    return found


def _escape_xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_skills_for_prompt(skills: Iterable[Skill]) -> str:
    """pi's ``<available_skills>`` block (starting with a blank line), or ``""`` when none is visible."""
    visible: Sequence[Skill] = [s for s in skills if not s.disable_model_invocation]
    if not visible:
        return ""
    lines = [
        "\n\nThe following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory "
        "(parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines.append("  <skill>")
        lines.append(f"    <name>{_escape_xml(skill.name)}</name>")
        lines.append(f"    <description>{_escape_xml(skill.description)}</description>")
        lines.append(f"    <location>{_escape_xml(skill.file_path.as_posix())}</location>")
        lines.append("  </skill>")
    lines.append("</available_skills>")
    return "\n".join(lines)
