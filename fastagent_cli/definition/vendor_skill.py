"""``fastagent add skill <source>``: copy a skill into ``<agent dir>/skills/<name>/``.

Vendoring, not a registry: the copy is the agent's own file from then on (git tracks it), and
only the definition's ``skills/`` is read at run time. Sources:

* a local skill directory (a path that exists, or starts with ``./``, ``../``, ``/``, ``~``);
* a bare name found in ``~/.agents/skills/<name>`` or ``~/.pi/agent/skills/<name>``;
* a git repository, cloned with ``git``: a URL (``https://…``, ``ssh://…``, ``git@host:…``,
  ``file://…``), a local repository path, or GitHub shorthand ``owner/repo/path/to/skill``. A
  skill below the repository root is named after ``//`` (``https://host/r.git//skills/pdf``); a
  branch or tag after ``#``.

The ``SKILL.md`` is validated before anything is replaced (a skill the runtime would skip is
refused), an existing skill is replaced only with ``update=True``, and the replacement is a
rename, restored if it fails.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from fastagent_cli.definition.frontmatter import parse_frontmatter
from fastagent_cli.definition.skills import SKILL_FILE, SkillDiagnostic, load_skill_file, validate_name
from fastagent_cli.errors import FastagentError, UsageError, one_line

__all__ = ["GLOBAL_SKILL_DIRS", "SkillSource", "VendoredSkill", "parse_source", "vendor_skill"]

GLOBAL_SKILL_DIRS = (Path("~/.agents/skills"), Path("~/.pi/agent/skills"))
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP = re.compile(r"^[\w.-]+@[\w.-]+:")
_GIT_TIMEOUT_S = 300


@dataclass(frozen=True, slots=True)
class SkillSource:
    kind: str  # "local" | "git"
    location: str
    subpath: str = ""
    ref: str | None = None

    @property
    def default_name(self) -> str:
        base = self.subpath.rstrip("/").split("/")[-1] if self.subpath else self.location.rstrip("/")
        return re.sub(r"\.git$", "", base.replace("\\", "/").split("/")[-1].split(":")[-1])


@dataclass(slots=True)
class VendoredSkill:
    name: str
    description: str
    dest: Path
    overwritten: bool
    has_scripts: bool
    diagnostics: list[SkillDiagnostic] = field(default_factory=list)


def _is_git_repo(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def _split_subpath(text: str, start: int = 0) -> tuple[str, str]:
    index = text.find("//", start)
    if index < 0:
        return text, ""
    return text[:index], text[index + 2 :].strip("/")


def parse_source(source: str) -> SkillSource:
    if not source.strip():
        raise UsageError("add skill needs a SOURCE: a skill directory, a skill name, or a git repository")
    raw, _, ref = source.partition("#") if not Path(os.path.expanduser(source)).exists() else (source, "", "")
    ref_or_none = ref or None
    if _URL.match(raw):
        repo, sub = _split_subpath(raw, raw.index("://") + 3)
        return SkillSource("git", repo, sub, ref_or_none)
    if _SCP.match(raw):
        repo, sub = _split_subpath(raw)
        return SkillSource("git", repo, sub, ref_or_none)
    local, sub = _split_subpath(raw)
    path = Path(os.path.expanduser(local))
    if raw.startswith(("./", "../", "/", "~")) or raw in (".", "..") or path.exists():
        if _is_git_repo(path) and not (path / sub / SKILL_FILE).is_file():
            return SkillSource("git", path.resolve().as_uri(), sub, ref_or_none)
        return SkillSource("local", str((path / sub).resolve()))
    if "/" not in raw:
        for root in GLOBAL_SKILL_DIRS:
            candidate = root.expanduser() / raw
            if (candidate / SKILL_FILE).is_file():
                return SkillSource("local", str(candidate))
        dirs = ", ".join(str(d) for d in GLOBAL_SKILL_DIRS)
        raise FastagentError(
            f'no skill "{raw}" in {dirs}: give a path to a skill directory, or a git repository '
            "(owner/repo/path/to/skill)"
        )
    parts = [p for p in raw.split("/") if p]
    if len(parts) < 2:
        raise UsageError(f"cannot read {source!r} as a skill source")
    repo = f"https://github.com/{parts[0]}/{parts[1].removesuffix('.git')}.git"
    return SkillSource("git", repo, "/".join(parts[2:]), ref_or_none)


def _clone(source: SkillSource, into: Path) -> Path:
    git = shutil.which("git")
    if git is None:
        raise FastagentError(
            "git is not installed: clone the repository yourself, then run `fastagent add skill ./path`"
        )
    command = [git, "clone", "--depth", "1", "--quiet"]
    if source.ref:
        command += ["--branch", source.ref]
    command += ["--", source.location, str(into)]
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        raise FastagentError(f"git clone {source.location} took longer than {_GIT_TIMEOUT_S}s") from None
    if done.returncode != 0:
        detail = one_line(done.stderr or done.stdout or f"exit {done.returncode}", 400)
        raise FastagentError(f"git clone {source.location} failed: {detail}")
    return into / source.subpath if source.subpath else into


def _check(skill_dir: Path, shown: str, fallback: str) -> tuple[str, str]:
    """Validate the source's SKILL.md as the runtime will; returns ``(name, description)``.

    The name is the frontmatter ``name`` when it is a valid skill name, else ``fallback``."""
    skill_md = skill_dir / SKILL_FILE
    if not skill_dir.is_dir() or not skill_md.is_file():
        raise FastagentError(f"{shown} has no {SKILL_FILE}: a skill is a directory holding {SKILL_FILE}")
    skill, diagnostics = load_skill_file(skill_md)
    if skill is None:
        reasons = "; ".join(d.message for d in diagnostics) or "it cannot be read"
        raise FastagentError(f"{shown}/{SKILL_FILE} is not a valid skill ({reasons}): nothing was changed")
    declared = parse_frontmatter(skill_md.read_text(encoding="utf-8"))[0].get("name")
    if isinstance(declared, str) and not validate_name(declared):
        return declared, skill.description
    return fallback, skill.description


def vendor_skill(agent_dir: Path, source: str, *, update: bool = False) -> VendoredSkill:
    parsed = parse_source(source)
    skills_dir = agent_dir / "skills"
    if skills_dir.exists() and not skills_dir.is_dir():
        raise FastagentError(f"{skills_dir} exists and is not a directory")
    with tempfile.TemporaryDirectory(prefix="fastagent-skill-") as scratch:
        src = _clone(parsed, Path(scratch) / "repo") if parsed.kind == "git" else Path(parsed.location)
        shown = source if parsed.kind == "git" else str(src)
        fallback = parsed.default_name if parsed.kind == "git" else src.name
        name, description = _check(src, shown, fallback)
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise FastagentError(
                f"cannot name a skill directory {name!r}: set a valid name in its {SKILL_FILE}"
            )
        dest = skills_dir / name
        _refuse_leftovers(skills_dir, name)
        overwritten = dest.exists()
        if overwritten and not update:
            raise FastagentError(
                f"skills/{name} already exists: re-run with --update to replace it (git shows the change), "
                "or remove it"
            )
        skills_dir.mkdir(parents=True, exist_ok=True)
        staging = skills_dir / f".{name}.vendoring-{secrets.token_hex(4)}"
        try:
            shutil.copytree(src, staging, ignore=shutil.ignore_patterns(".git"))
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    _install(staging, dest, overwritten)
    _skill, diagnostics = load_skill_file(dest / SKILL_FILE)
    return VendoredSkill(name, description, dest, overwritten, (dest / "scripts").is_dir(), diagnostics)


def _refuse_leftovers(skills_dir: Path, name: str) -> None:
    leftovers = sorted(p.name for p in skills_dir.glob(f".{name}.previous-*")) if skills_dir.is_dir() else []
    if leftovers:
        raise FastagentError(
            f"found an interrupted update of skills/{name} ({', '.join(leftovers)}): restore it to "
            f"skills/{name} or remove it, then retry"
        )


def _install(staging: Path, dest: Path, overwritten: bool) -> None:
    previous = dest.with_name(f".{dest.name}.previous-{secrets.token_hex(4)}")
    try:
        if overwritten:
            os.rename(dest, previous)
        try:
            os.rename(staging, dest)
        except BaseException:
            if overwritten:
                os.rename(previous, dest)
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if overwritten:
        shutil.rmtree(previous, ignore_errors=True)
