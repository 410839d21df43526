"""chat without a terminal cannot ask: a call that needs approval is denied at once (the model
reads why), so a piped chat never waits for an answer nobody in it can give. (The terminal chat
asks inline: tests/chat/test_pty_approvals.py.)"""

from __future__ import annotations

import json

from tests.cli.test_invoke_approve import DEPLOY, NOTE, SCRIPT
from tests.conftest import AgentFactory, RunCli


def test_a_gated_call_in_chat_is_denied_and_the_turn_goes_on(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    files = {"scripts/s.json": json.dumps(SCRIPT), "tools/deploy.py": DEPLOY, "tools/note.py": NOTE}
    agent = make_agent(files, model="scripted/s", config="coding_tools = false\n")
    done = run_cli("chat", str(agent), "--session", "c1", input="go\n", timeout=60)
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout
    shown = run_cli("sessions", "show", "c1", str(agent)).stdout
    assert "Denied: deploy was not approved (chat without a terminal)" in shown
    assert "approval denied · deploy · by chat without a terminal (auto)" in shown
