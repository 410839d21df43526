"""``fastagent attach`` in a terminal when nothing serves the agent and its config could not
serve a control plane: one line at once, not 15 s of silence."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.chat.pty_run import PtyProcess
from tests.conftest import cli_command


def attach_in_a_terminal(tmp_path: Path, toml: str) -> tuple[int, str, float]:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text('model = "scripted/echo"\n' + toml)
    started = time.monotonic()
    term = PtyProcess([*cli_command(), "attach", "s1", str(agent)], cwd=tmp_path, cols=400)
    try:
        code = term.wait(30)
    finally:
        term.close()
    return code, " ".join(term.text.split()), time.monotonic() - started


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("session_control = false\n", "session_control = false"),
        ("[http]\nweb_chat = false\n", "[http] web_chat = false"),
    ],
)
def test_a_config_without_a_plane_fails_at_once_saying_so(tmp_path: Path, toml: str, said: str) -> None:
    code, text, took = attach_in_a_terminal(tmp_path, toml)
    assert code == 1, text
    assert took < 10
    assert "Error: nothing to attach to:" in text and f"says {said}" in text
    assert "set session_control = true and run `fastagent start`" in text


def test_the_default_config_with_nothing_serving_says_how_to_serve_it(tmp_path: Path) -> None:
    code, text, took = attach_in_a_terminal(tmp_path, "")
    assert code == 1, text
    assert took < 10
    assert "Error: nothing serves" in text and "run `fastagent dev` there" in text
