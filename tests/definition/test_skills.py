"""Skills: discovery, pi's validation messages, collisions, the frontmatter subset."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fastagent_cli.definition.frontmatter import FrontmatterError, parse_frontmatter
from fastagent_cli.definition.skills import format_skills_for_prompt, load_skill_file, load_skills


def _skill(root: Path, rel: str, frontmatter: str, body: str = "Body.\n") -> Path:
    path = root / rel / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter}\n---\n{body}", encoding="utf-8")
    return path


def test_discovery_rules(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    _skill(skills, "b-skill", "name: b-skill\ndescription: B.")
    _skill(skills, "a-skill", "name: a-skill\ndescription: A.")
    _skill(skills, "a-skill/nested", "name: nested\ndescription: not reached: a-skill is a root")
    _skill(skills, "group/inner", "name: inner\ndescription: Found by recursion.")
    _skill(skills, ".hidden", "name: hidden\ndescription: skipped")
    _skill(skills, "node_modules/dep", "name: dep\ndescription: skipped")
    (skills / "README.md").write_text("not a skill")
    found = load_skills(skills)
    assert [s.name for s in found.skills] == ["a-skill", "b-skill", "inner"]
    assert found.diagnostics == [] and found.collisions == []
    assert load_skills(tmp_path / "absent").skills == []


def test_missing_description_skips_the_skill_with_a_diagnostic(tmp_path: Path) -> None:
    path = _skill(tmp_path / "skills", "nodesc", "name: nodesc")
    found = load_skills(tmp_path / "skills")
    assert found.skills == []
    assert [(d.type, d.message, d.path) for d in found.diagnostics] == [
        ("warning", "description is required", str(path))
    ]


@pytest.mark.parametrize(
    ("name", "messages"),
    [
        (
            "Bad_Name",
            [
                'name "Bad_Name" does not match parent directory "dir"',
                "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
            ],
        ),
        (
            "-dir",
            ['name "-dir" does not match parent directory "dir"', "name must not start or end with a hyphen"],
        ),
        (
            "a--b",
            [
                'name "a--b" does not match parent directory "dir"',
                "name must not contain consecutive hyphens",
            ],
        ),
        (
            "x" * 65,
            [f'name "{"x" * 65}" does not match parent directory "dir"', "name exceeds 64 characters (65)"],
        ),
    ],
)
def test_name_diagnostics_keep_the_skill(tmp_path: Path, name: str, messages: list[str]) -> None:
    path = _skill(tmp_path, "dir", f"name: {name}\ndescription: Fine.")
    skill, diagnostics = load_skill_file(path)
    assert skill is not None and skill.name == name
    assert [d.message for d in diagnostics] == messages


def test_long_description_and_default_name(tmp_path: Path) -> None:
    path = _skill(tmp_path, "my-skill", f"description: {'d' * 1025}")
    skill, diagnostics = load_skill_file(path)
    assert skill is not None and skill.name == "my-skill"  # the name defaults to the directory
    assert [d.message for d in diagnostics] == ["description exceeds 1024 characters (1025)"]


def test_yaml_error_skips_the_skill_with_its_message(tmp_path: Path) -> None:
    path = _skill(tmp_path, "broken", "name: broken\n  description: misplaced\nthis is not yaml")
    skill, diagnostics = load_skill_file(path)
    assert skill is None
    assert len(diagnostics) == 1 and "line 4" in diagnostics[0].message


def test_collision_keeps_the_first_and_reports_the_rest(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    first = _skill(skills, "one", "name: same\ndescription: First.")
    second = _skill(skills, "two", "name: same\ndescription: Second.")
    found = load_skills(skills)
    assert [s.description for s in found.skills] == ["First."]
    assert [(c.name, c.winner_path, c.loser_path, c.message) for c in found.collisions] == [
        ("same", str(first), str(second), 'name "same" collision')
    ]


def test_symlinked_copy_of_the_same_file_is_skipped_silently(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    _skill(skills, "real", "name: real\ndescription: Real.")
    os.symlink(skills / "real", skills / "zlink")
    found = load_skills(skills)
    assert [s.name for s in found.skills] == ["real"] and found.collisions == []


def test_prompt_block_escapes_and_hides(tmp_path: Path) -> None:
    _skill(tmp_path / "skills", "shown", 'name: shown\ndescription: Use <this> & "that"')
    _skill(
        tmp_path / "skills", "manual", "name: manual\ndescription: Manual.\ndisable-model-invocation: true"
    )
    block = format_skills_for_prompt(load_skills(tmp_path / "skills").skills)
    assert block.startswith("\n\nThe following skills provide specialized instructions")
    assert "<description>Use &lt;this&gt; &amp; &quot;that&quot;</description>" in block
    assert "manual" not in block and block.endswith("</available_skills>")


def test_frontmatter_subset() -> None:
    text = """---
name: pdf
description: >
  Extract text from PDFs,
  fill forms.

  Second paragraph.
quoted: 'it''s'
double: "tab\\there"
flag: true
count: 3
literal: |-
  line one
  line two
tags:
  - a
  - "b"
metadata:
  author: me
  version: 2
plain: one
  continued
---
Body here.
"""
    data, body = parse_frontmatter(text)
    assert data == {
        "name": "pdf",
        "description": "Extract text from PDFs, fill forms.\nSecond paragraph.\n",
        "quoted": "it's",
        "double": "tab\there",
        "flag": True,
        "count": 3,
        "literal": "line one\nline two",
        "tags": ["a", "b"],
        "metadata": {"author": "me", "version": 2},
        "plain": "one continued",
    }
    assert body == "Body here.\n"


@pytest.mark.parametrize(
    "text",
    ["---\njust words\n---\n", "---\nkey: [1, 2]\n---\n", '---\nkey: "open\n---\n', "---\n\tkey: v\n---\n"],
)
def test_frontmatter_errors(text: str) -> None:
    with pytest.raises(FrontmatterError, match="line 2"):
        parse_frontmatter(text)


def test_no_or_unclosed_frontmatter_is_empty() -> None:
    assert parse_frontmatter("# Title\n") == ({}, "# Title\n")
    assert parse_frontmatter("---\nname: x\n")[0] == {}
