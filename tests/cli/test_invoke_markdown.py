"""``invoke`` renders the answer as Markdown on a terminal (a pty), and prints it as written to a
pipe or with ``--raw``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.chat.pty_run import PtyProcess
from tests.conftest import AgentFactory, RunCli, cli_command

ANSWER = "# Release notes\n\nThis is **bold** and `code`.\n\n- one\n- two\n"
SCRIPT = {"rules": [{"steps": [{"text": ANSWER}]}]}


def agent(make_agent: AgentFactory) -> Path:
    return make_agent(
        {"scripts/md.json": json.dumps(SCRIPT)}, model="scripted/md", config="coding_tools = false\n"
    )


def in_a_terminal(directory: Path, *flags: str) -> str:
    term = PtyProcess([*cli_command(), "invoke", "notes", str(directory), *flags], cwd=directory, cols=100)
    try:
        assert term.wait(30) == 0, term.text
        return term.text
    finally:
        term.close()


def test_a_terminal_gets_rendered_markdown(make_agent: AgentFactory) -> None:
    screen = in_a_terminal(agent(make_agent))
    assert "Release notes" in screen and "# Release notes" not in screen
    assert "This is bold and code." in screen and "**" not in screen
    assert "• one" in screen and "- one" not in screen


def test_raw_and_a_pipe_get_the_text_as_written(make_agent: AgentFactory, run_cli: RunCli) -> None:
    directory = agent(make_agent)
    assert ANSWER in in_a_terminal(directory, "--raw")
    assert run_cli("invoke", "notes", str(directory)).stdout == ANSWER
