"""The four-segment system prompt: exact text for the fixture agent, each segment's rules, and the
per-turn freshness (stat-checked, re-read after an edit, a broken edit fails only that call)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fastagent_cli.assembly import inspect_agent_dir
from fastagent_cli.definition.context import ContextFile
from fastagent_cli.definition.freshness import RACY_WINDOW_NS
from fastagent_cli.definition.prompt import CODING_IDENTITY, DEFAULT_IDENTITY, DefinitionPrompt, system_prompt
from fastagent_cli.definition.skills import Skill
from fastagent_cli.errors import ConfigError
from fastagent_cli.tools.base import Tool, text_result
from tests.definition.fixture_agent import build_fixture_agent

EXPECTED = """\
You are Wren, the weather desk's agent. Answer in one sentence.

Available tools:
- read: Read file contents
- search_tools: Discover and activate additional tools.

1 additional tool(s) are registered but inactive — use search_tools to discover and activate them \
before concluding a capability is missing.

In addition to the tools above, you may have access to other custom tools depending on the project.

Guidelines:
- Be concise in your responses
- Show file paths clearly when working with files

<project_context>

Project-specific instructions and guidelines:

<project_instructions path="{root}/repo/AGENTS.md">
Outer rule: be kind.
</project_instructions>

<project_instructions path="{root}/repo/ws/AGENTS.md">
Workspace rule: use metric units.

</project_instructions>

</project_context>


The following skills provide specialized instructions for specific tasks.
Use the read tool to load a skill's file when the task matches its description.
When a skill file references a relative path, resolve it against the skill directory (parent of \
SKILL.md / dirname of the path) and use that absolute path in tool commands.

<available_skills>
  <skill>
    <name>alpha</name>
    <description>Summarise a forecast for a city.</description>
    <location>{root}/repo/ws/fastagent/skills/alpha/SKILL.md</location>
  </skill>
  <skill>
    <name>beta</name>
    <description>Compare two forecasts &amp; pick the &lt;better&gt; one.</description>
    <location>{root}/repo/ws/fastagent/skills/beta/SKILL.md</location>
  </skill>
  <skill>
    <name>gamma</name>
    <description>Explain a weather warning to a non-expert.</description>
    <location>{root}/repo/ws/fastagent/skills/gamma/SKILL.md</location>
  </skill>
</available_skills>
Current working directory: {root}/repo/ws"""


def _tool(name: str, description: str = "does things", *, deferred: bool = False) -> Tool:
    async def execute(args: object, ctx: object) -> object:
        return text_result("x")

    return Tool(name, description, {"type": "object"}, execute, deferred=deferred)  # type: ignore[arg-type]


def _age(root: Path, seconds: float = 5.0) -> None:
    """Move every mtime into the past, then wait out the racy window for the ctimes."""
    past = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        os.utime(path, (past, past))
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.05)


def test_fixture_agent_prompt_is_exact(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    workspace, _agent = build_fixture_agent(root)
    surface = inspect_agent_dir(workspace)
    assert surface.prompt() == EXPECTED.format(root=root.as_posix())


def test_segments_of_the_fixture_prompt(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    workspace, agent = build_fixture_agent(root)
    prompt = inspect_agent_dir(workspace).prompt()
    identity, rest = prompt.split("\n\n", 1)
    assert identity == (agent / "persona.md").read_text().strip()  # (1) persona replaces identity
    assert "weather" not in rest.split("<project_context>")[0]  # the deferred tool is not listed
    outer = prompt.index(f'path="{root}/repo/AGENTS.md"')
    inner = prompt.index(f'path="{root}/repo/ws/AGENTS.md"')
    skills = prompt.index("<available_skills>")
    assert outer < inner < skills  # (2) root first, nearest last, then (3) skills
    assert prompt.endswith(f"\nCurrent working directory: {root}/repo/ws")  # (4) cwd, and no date
    assert "Current date" not in prompt and time.strftime("%Y-%m-%d") not in prompt


def test_default_identity_depends_on_the_coding_surface(tmp_path: Path) -> None:
    coding = [_tool(n) for n in ("read", "bash", "edit", "write")]
    assert system_prompt(coding, tmp_path).startswith(CODING_IDENTITY + "\n\nAvailable tools:")
    assert system_prompt(coding[:1], tmp_path).startswith(DEFAULT_IDENTITY + "\n\nAvailable tools:")
    assert "Available tools:\n(none)\n" in system_prompt([], tmp_path)


def test_guidelines_follow_the_mounted_tools(tmp_path: Path) -> None:
    full = system_prompt([_tool(n) for n in ("read", "bash", "edit", "write")], tmp_path)
    assert "- Use bash for file operations like ls, rg, find\n" in full
    assert "- Use read to examine files before editing." in full
    assert "- Use write only for new files or complete rewrites\n" in full
    bare = system_prompt([_tool("lookup")], tmp_path)
    assert "Guidelines:\n- Be concise in your responses\n- Show file paths clearly" in bare


def test_tool_lines_use_the_snippet_or_the_first_description_line(tmp_path: Path) -> None:
    tools = [_tool("lookup", "Find an order.\nLonger text."), _tool("hidden", "x", deferred=True)]
    tools.append(Tool("snip", "long", {}, tools[0].execute, prompt_snippet="Short snippet"))
    prompt = system_prompt(tools, tmp_path)
    assert "- lookup: Find an order.\n- snip: Short snippet\n\n1 additional tool(s)" in prompt
    assert "hidden" not in prompt


def test_skills_are_listed_only_when_read_is_mounted(tmp_path: Path) -> None:
    skill = Skill("alpha", "Does alpha.", tmp_path / "skills/alpha/SKILL.md")
    assert "<available_skills>" in system_prompt([_tool("read")], tmp_path, skills=[skill])
    assert "<available_skills>" not in system_prompt([_tool("bash")], tmp_path, skills=[skill])
    hidden = Skill("beta", "Hidden.", tmp_path / "b/SKILL.md", disable_model_invocation=True)
    assert "<available_skills>" not in system_prompt([_tool("read")], tmp_path, skills=[hidden])


def test_context_wrapping_is_pis(tmp_path: Path) -> None:
    files = [ContextFile(tmp_path / "AGENTS.md", "Rule.")]
    prompt = system_prompt([], tmp_path, context_files=files)
    expected = (
        "\n\n<project_context>\n\nProject-specific instructions and guidelines:\n\n"
        f'<project_instructions path="{tmp_path.as_posix()}/AGENTS.md">\nRule.\n</project_instructions>\n\n'
        "</project_context>\n\nCurrent working directory:"
    )
    assert expected in prompt


def test_unchanged_definition_is_not_reread(tmp_path: Path) -> None:
    workspace, agent = build_fixture_agent(tmp_path.resolve())
    _age(tmp_path)
    prompt = inspect_agent_dir(workspace).prompt
    first = prompt()
    for _ in range(50):
        assert prompt() == first
    assert prompt.loads == 1


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda a, w: (a / "persona.md").write_text("You are Kestrel."), "You are Kestrel."),
        (lambda a, w: (w / "AGENTS.md").write_text("Use imperial units."), "Use imperial units."),
        (
            lambda a, w: (a / "skills/alpha/SKILL.md").write_text("---\ndescription: Changed alpha.\n---\n"),
            "<description>Changed alpha.</description>",
        ),
        (
            lambda a, w: (
                (a / "skills/delta").mkdir()
                or (a / "skills/delta/SKILL.md").write_text("---\ndescription: A new skill.\n---\n")
            ),
            "<name>delta</name>",
        ),
        (lambda a, w: (a / "AGENTS.md").write_text("Agent's own notes."), "Agent's own notes."),
    ],
    ids=["persona", "workspace-agents-md", "skill-edit", "skill-added", "agent-dir-agents-md"],
)
def test_an_edit_is_seen_by_the_next_call(tmp_path: Path, edit, expected: str) -> None:  # type: ignore[no-untyped-def]
    workspace, agent = build_fixture_agent(tmp_path.resolve())
    _age(tmp_path)
    prompt = inspect_agent_dir(workspace).prompt
    assert expected not in prompt()
    edit(agent, workspace)
    assert expected in prompt()
    assert prompt.loads == 2


def test_agent_dir_agents_md_comes_first(tmp_path: Path) -> None:
    workspace, agent = build_fixture_agent(tmp_path.resolve())
    (agent / "CLAUDE.md").write_text("Agent notes (CLAUDE.md).")
    prompt = inspect_agent_dir(workspace).prompt()
    assert (
        prompt.index("Agent notes (CLAUDE.md).") < prompt.index("Outer rule") < prompt.index("Workspace rule")
    )


def test_a_broken_edit_fails_only_that_call(tmp_path: Path) -> None:
    workspace, agent = build_fixture_agent(tmp_path.resolve())
    prompt = inspect_agent_dir(workspace).prompt
    prompt()
    (agent / "persona.md").write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(ConfigError, match="persona.md: not UTF-8"):
        prompt()
    (agent / "persona.md").write_text("You are fixed.")
    assert prompt().startswith("You are fixed.\n")


def test_tools_source_is_read_per_call(tmp_path: Path) -> None:
    tools = [_tool("read")]
    prompt = DefinitionPrompt(tmp_path, tmp_path, lambda: tools)
    assert "- lookup:" not in prompt()
    tools.append(_tool("lookup"))
    assert "- lookup: does things" in prompt()
    assert prompt.loads == 1  # the files were not re-read for a tool change
