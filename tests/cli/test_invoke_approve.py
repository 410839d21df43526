"""``invoke --approve``: approvals answered without a person, so CI never hangs; ``sessions show``
prints the audit trail."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import AgentFactory, RunCli

SCRIPT = {
    "rules": [
        {
            "steps": [
                {"toolCalls": [{"name": "deploy", "args": {"env": "prod"}}, {"name": "note", "args": {}}]},
                {"text": "finished"},
            ]
        }
    ]
}
DEPLOY = (
    "from fastagent_cli import tool\n\n@tool(approval=True)\ndef deploy(env: str) -> str:\n"
    "    'Deploy.'\n    return f'deployed {env}'\n"
)
NOTE = "from fastagent_cli import tool\n\n@tool\ndef note() -> str:\n    'Note.'\n    return 'noted'\n"


def _agent(make_agent: AgentFactory) -> Path:
    files = {"scripts/s.json": json.dumps(SCRIPT), "tools/deploy.py": DEPLOY, "tools/note.py": NOTE}
    return make_agent(files, model="scripted/s", config="coding_tools = false\n")


def _results(stdout: str) -> dict[str, dict[str, object]]:
    events = [json.loads(line) for line in stdout.splitlines()]
    names = {e["id"]: e["name"] for e in events if e["type"] == "tool_started"}
    return {names[e["id"]]: e for e in events if e["type"] == "tool_ended"}


def test_by_default_a_gated_call_is_denied_with_a_clear_result_and_a_stderr_line(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = _agent(make_agent)
    done = run_cli("invoke", "go", str(agent), "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    results = _results(done.stdout)
    assert results["note"]["content"] == [{"type": "text", "text": "noted"}]
    assert results["deploy"]["isError"] is True
    assert results["deploy"]["content"] == [
        {"type": "text", "text": "Denied: deploy was not approved (invoke --approve none)"}
    ]
    assert (
        "[fastagent] deploy needs approval and was denied (--approve none); "
        "pass --approve deploy or --approve all to let it run"
    ) in done.stderr


def test_approve_a_tool_by_name_runs_it_and_sessions_show_prints_the_decision(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = _agent(make_agent)
    done = run_cli("invoke", "go", str(agent), "--json", "--approve", "deploy,other", "-s", "s1", timeout=60)
    assert done.returncode == 0, done.stderr
    assert _results(done.stdout)["deploy"]["content"] == [{"type": "text", "text": "deployed prod"}]
    assert "needs approval" not in done.stderr
    shown = run_cli("sessions", "show", "s1", str(agent))
    assert shown.returncode == 0, shown.stderr
    assert "approval approved · deploy · by invoke --approve deploy,other (auto)" in shown.stdout


def test_approve_all_and_a_bad_value(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = _agent(make_agent)
    done = run_cli("invoke", "go", str(agent), "--json", "--approve", "all", timeout=60)
    assert _results(done.stdout)["deploy"]["isError"] is False
    bad = run_cli("invoke", "go", str(agent), "--approve", "a b")
    assert bad.returncode == 2
    assert "--approve takes all, none or a comma list of tool names, not 'a b'" in bad.stderr
