"""The agent's skills for ``/skills`` and ``/<skill-name>``.

Skills come from the opened definition when it exposes them (an ``OpenedAgent.skills`` list or
method of objects with ``name``, ``description`` and a path); otherwise from
``skills/<name>/SKILL.md`` frontmatter (``name`` + ``description``; a skill without a description
is skipped, the first of two with the same name wins). Read fresh on every call: skill edits go
live without a restart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SkillInfo", "list_skills", "parse_frontmatter", "skill_prompt"]


@dataclass(frozen=True, slots=True)
class SkillInfo:
    name: str
    description: str
    path: Path | None


def parse_frontmatter(text: str) -> dict[str, str]:
    """Flat ``key: value`` pairs of a ``---`` frontmatter block (quoted, ``>``/``|`` blocks joined)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    out: dict[str, str] = {}
    key: str | None = None
    folded: list[str] = []
    for line in lines[1:]:
        if line.strip() == "---":
            break
        match = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", line)
        if match and not line[:1].isspace():
            if key is not None and folded:
                out[key] = " ".join(folded)
            key, value = match.group(1), match.group(2).strip()
            folded = []
            if value in (">", "|", ">-", "|-"):
                continue
            out[key] = value.strip("\"'")
            key = None
        elif key is not None and line.strip():
            folded.append(line.strip())
    if key is not None and folded:
        out[key] = " ".join(folded)
    return out


def _from_definition(opened: Any) -> list[SkillInfo] | None:
    source = getattr(opened, "skills", None)
    if source is None:
        return None
    items = source() if callable(source) else source
    skills: list[SkillInfo] = []
    for item in items or ():
        name = getattr(item, "name", None)
        if not isinstance(name, str):
            continue
        path = next(
            (getattr(item, a) for a in ("path", "file_path", "location") if getattr(item, a, None)), None
        )
        skills.append(
            SkillInfo(name, str(getattr(item, "description", "") or ""), Path(path) if path else None)
        )
    return skills


def list_skills(opened: Any) -> list[SkillInfo]:
    from_definition = _from_definition(opened)
    if from_definition is not None:
        return from_definition
    root = Path(opened.agent_dir) / "skills"
    if not root.is_dir():
        return []
    skills: dict[str, SkillInfo] = {}
    for skill_md in sorted(root.glob("*/SKILL.md")):
        try:
            meta = parse_frontmatter(skill_md.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        name = meta.get("name") or skill_md.parent.name
        description = meta.get("description", "")
        if description and name not in skills:
            skills[name] = SkillInfo(name, description, skill_md)
    return list(skills.values())


def skill_prompt(skill: SkillInfo, request: str) -> str:
    """The prompt ``/<skill-name> [request]`` sends: ask the model to use that skill."""
    where = f" (its instructions are in {skill.path}; read them first)" if skill.path else ""
    text = f'Use the "{skill.name}" skill{where}.'
    return f"{text}\n\n{request}" if request.strip() else text
