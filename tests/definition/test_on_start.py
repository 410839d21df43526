"""The On Start section: found at any heading level, up to the next heading of the same or a
higher level, out of the system prompt, never inside code fences."""

from __future__ import annotations

from pathlib import Path

from fastagent_cli.definition.on_start import split_on_start
from fastagent_cli.definition.prompt import DefinitionPrompt


def test_a_section_runs_to_the_next_heading_of_the_same_or_higher_level() -> None:
    text = "# Agent\nBe kind.\n\n## On Start\nCheck the inbox.\n### Details\nOnly unread.\n## Style\nShort.\n"
    rest, section = split_on_start(text)
    assert section == "Check the inbox.\n### Details\nOnly unread."
    assert rest == "# Agent\nBe kind.\n\n## Style\nShort.\n"


def test_any_level_case_and_a_colon_and_closing_hashes() -> None:
    for heading in ("# On Start", "###### on start:", "## ON   START ##", "   ### On Start"):
        rest, section = split_on_start(f"intro\n{heading}\nsay hi\n")
        assert section == "say hi", heading
        assert rest == "intro\n"


def test_no_section_and_empty_sections() -> None:
    assert split_on_start("# Persona\nOn Start is not a heading here.\n") == (
        "# Persona\nOn Start is not a heading here.\n",
        None,
    )
    assert split_on_start("# On Start\n\n# Next\n") == ("# Next\n", None)
    assert split_on_start("#On Start\nx\n")[1] is None  # not an ATX heading


def test_fenced_code_is_never_a_heading_and_stays_in_the_section() -> None:
    text = "```md\n# On Start\n```\n# On Start\n~~~\n# not a heading\n~~~\ndone\n# After\n"
    rest, section = split_on_start(text)
    assert rest == "```md\n# On Start\n```\n# After\n"
    assert section == "~~~\n# not a heading\n~~~\ndone"


def test_several_sections_are_joined_in_order() -> None:
    _, section = split_on_start("# On Start\none\n# Mid\nx\n## On Start\ntwo\n")
    assert section == "one\n\ntwo"


def test_the_prompt_loses_the_sections_of_persona_and_the_agents_own_agents_md(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "persona.md").write_text("You are Ada.\n\n## On Start\nGreet the team.\n")
    (agent / "AGENTS.md").write_text("# Rules\nBe brief.\n# On Start\nRead the news.\n")
    (tmp_path / "AGENTS.md").write_text("# Workspace\n# On Start\nnot the agent's own file\n")
    loaded = DefinitionPrompt(agent, tmp_path).snapshot()
    assert loaded.on_start == "Greet the team.\n\nRead the news."
    prompt = loaded.system_prompt
    assert "You are Ada." in prompt and "Be brief." in prompt
    assert "Greet the team" not in prompt and "Read the news" not in prompt
    assert "not the agent's own file" in prompt  # a workspace AGENTS.md is not the agent's


def test_a_persona_that_is_only_an_on_start_section_keeps_the_default_identity(tmp_path: Path) -> None:
    (tmp_path / "persona.md").write_text("# On Start\nhello\n")
    loaded = DefinitionPrompt(tmp_path, tmp_path).snapshot()
    assert loaded.persona is None and loaded.on_start == "hello"
    assert "You are an AI assistant operating inside fastagent" in loaded.system_prompt
