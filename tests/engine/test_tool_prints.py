"""What a tool prints goes to stderr (the log), at most 16 KiB per call, never to stdout: the real
``fastagent invoke --json`` keeps a clean stdout with a tool that prints a megabyte."""

from __future__ import annotations

import json

from tests.conftest import AgentFactory, RunCli

NOISY = '''from fastagent_cli import tool


@tool
def noisy(lines: int) -> str:
    """Prints a lot."""
    for i in range(lines):
        print(f"line {i:06d} " + "x" * 100)
    return "printed"
'''
MODEL = """
def reply(request):
    if request.round == 0:
        return {"toolCalls": [{"name": "noisy", "args": {"lines": 10000}}]}
    return "done"
"""


def test_a_tools_prints_are_capped_on_stderr_and_stdout_stays_json(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent(
        {"tools/noisy.py": NOISY, "model.py": MODEL},
        model="scripted/model:reply",
        config="coding_tools = false\n",
    )
    done = run_cli("invoke", "go", str(agent), "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]  # every stdout line is an event
    assert events[-1]["type"] == "completed"
    assert "line 000000" in done.stderr and "line 009999" not in done.stderr
    assert (
        "[tool] noisy printed more than 16 KiB in one call; the rest of its output is dropped" in done.stderr
    )
    assert len(done.stderr) < 40 * 1024  # a megabyte was printed
