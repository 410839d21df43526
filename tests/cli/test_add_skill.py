"""``fastagent add skill``: local paths, global names, git repositories; validate before replacing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fastagent_cli.definition.vendor_skill import SkillSource, parse_source
from tests.conftest import RunCli

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _skill(path: Path, name: str, description: str = "Does a thing.", extra: str = "") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n\nSteps.\n")
    return path


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text('model = "scripted/echo"\n')
    return agent


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def bare_repo(tmp_path: Path) -> Path:
    """A bare repository holding skills/pdf (on main) and a newer pdf on the branch v2."""
    work = tmp_path / "work"
    _skill(work / "skills" / "pdf", "pdf", "Extract text from PDFs.")
    (work / "skills" / "pdf" / "scripts").mkdir()
    (work / "skills" / "pdf" / "scripts" / "extract.py").write_text("print('x')\n")
    _git(tmp_path, "init", "-q", str(work))
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "pdf")
    _git(work, "checkout", "-q", "-b", "v2")
    _skill(work / "skills" / "pdf", "pdf", "Extract text from PDFs, version two.")
    _git(work, "commit", "-q", "-am", "v2")
    _git(work, "checkout", "-q", "main")
    bare = tmp_path / "skills.git"
    _git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return bare


def test_local_path(agent: Path, tmp_path: Path, run_cli: RunCli) -> None:
    source = _skill(tmp_path / "src" / "release-notes", "release-notes", "Draft release notes.")
    (source / "template.md").write_text("## Notes\n")
    done = run_cli("add", "skill", str(source), str(agent))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Added skill release-notes in {agent.resolve()}/skills/release-notes")
    assert (agent / "skills/release-notes/template.md").read_text() == "## Notes\n"
    info = run_cli("info", str(agent), "--json")
    assert '"name": "release-notes"' in info.stdout


def test_the_frontmatter_name_names_the_directory(agent: Path, tmp_path: Path, run_cli: RunCli) -> None:
    source = _skill(tmp_path / "downloaded-copy", "tidy", "Tidy things.")
    assert run_cli("add", "skill", str(source), str(agent)).returncode == 0
    assert (agent / "skills/tidy/SKILL.md").is_file()


def test_bare_name_from_the_global_skill_dirs(agent: Path, isolated_env: Path, run_cli: RunCli) -> None:
    _skill(isolated_env / ".pi" / "agent" / "skills" / "commit", "commit", "Write commit messages.")
    done = run_cli("add", "skill", "commit", str(agent))
    assert done.returncode == 0, done.stderr
    assert "Write commit messages." in (agent / "skills/commit/SKILL.md").read_text()
    missing = run_cli("add", "skill", "nothere", str(agent))
    assert missing.returncode == 1
    assert 'no skill "nothere" in ~/.agents/skills, ~/.pi/agent/skills' in missing.stderr


def test_overwrite_needs_update_and_update_replaces(agent: Path, tmp_path: Path, run_cli: RunCli) -> None:
    source = _skill(tmp_path / "src" / "pdf", "pdf", "First version.")
    assert run_cli("add", "skill", str(source), str(agent)).returncode == 0
    _skill(source, "pdf", "Second version.")
    refused = run_cli("add", "skill", str(source), str(agent))
    assert refused.returncode == 1
    assert "skills/pdf already exists: re-run with --update to replace it" in refused.stderr
    assert "First version." in (agent / "skills/pdf/SKILL.md").read_text()
    updated = run_cli("add", "skill", str(source), str(agent), "--update")
    assert updated.returncode == 0 and updated.stdout.startswith("Updated skill pdf")
    assert "Second version." in (agent / "skills/pdf/SKILL.md").read_text()
    assert sorted(p.name for p in (agent / "skills").iterdir()) == ["pdf"]  # no staging or backup left


def test_invalid_skill_is_refused_before_replacing(agent: Path, tmp_path: Path, run_cli: RunCli) -> None:
    good = _skill(tmp_path / "src" / "pdf", "pdf", "Good.")
    assert run_cli("add", "skill", str(good), str(agent)).returncode == 0
    (good / "SKILL.md").write_text("---\nname: pdf\n---\nno description\n")
    done = run_cli("add", "skill", str(good), str(agent), "--update")
    assert done.returncode == 1
    assert "SKILL.md is not a valid skill (description is required): nothing was changed" in done.stderr
    assert "Good." in (agent / "skills/pdf/SKILL.md").read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    no_skill = run_cli("add", "skill", str(empty), str(agent))
    assert no_skill.returncode == 1 and "has no SKILL.md" in no_skill.stderr


@needs_git
def test_local_bare_repository_with_subpath_and_ref(agent: Path, bare_repo: Path, run_cli: RunCli) -> None:
    done = run_cli("add", "skill", f"{bare_repo}//skills/pdf", str(agent))
    assert done.returncode == 0, done.stderr
    assert "Extract text from PDFs." in (agent / "skills/pdf/SKILL.md").read_text()
    assert (agent / "skills/pdf/scripts/extract.py").is_file() and not (agent / "skills/pdf/.git").exists()
    assert "scripts/ holds code the agent may run" in done.stderr
    v2 = run_cli("add", "skill", f"{bare_repo.as_uri()}//skills/pdf#v2", str(agent), "--update")
    assert v2.returncode == 0, v2.stderr
    assert "version two" in (agent / "skills/pdf/SKILL.md").read_text()


@needs_git
def test_git_failures_leave_the_agent_untouched(
    agent: Path, bare_repo: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    wrong_ref = run_cli("add", "skill", f"{bare_repo.as_uri()}//skills/pdf#nope", str(agent))
    assert wrong_ref.returncode == 1 and "git clone" in wrong_ref.stderr and "failed" in wrong_ref.stderr
    wrong_path = run_cli("add", "skill", f"{bare_repo.as_uri()}//skills/none", str(agent))
    assert wrong_path.returncode == 1 and "has no SKILL.md" in wrong_path.stderr
    assert not (agent / "skills").exists() or list((agent / "skills").iterdir()) == []


def test_source_forms() -> None:
    assert parse_source("anthropics/skills/document-skills/pdf") == SkillSource(
        "git", "https://github.com/anthropics/skills.git", "document-skills/pdf"
    )
    assert parse_source("https://example.com/r.git//skills/x#v1") == SkillSource(
        "git", "https://example.com/r.git", "skills/x", "v1"
    )
    assert parse_source("git@github.com:o/r.git//a") == SkillSource("git", "git@github.com:o/r.git", "a")
    assert parse_source("https://example.com/r.git//skills/x").default_name == "x"
    assert parse_source("https://example.com/tidy.git").default_name == "tidy"


def test_not_an_agent(tmp_path: Path, run_cli: RunCli) -> None:
    source = _skill(tmp_path / "s", "s")
    done = run_cli("add", "skill", str(source), str(tmp_path / "s"))
    assert done.returncode == 1 and "run `fastagent init`" in done.stderr
