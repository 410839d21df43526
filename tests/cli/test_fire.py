"""``fastagent fire <name> [dir]``, run as the real process (feature I16): the turn runs now in
``schedule:<name>`` without touching the claims; unknown, broken and missing names."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import AgentFactory, RunCli, find_record

SCRIPT = {
    "rules": [
        {"match": "broken", "steps": [{"error": {"status": 400, "message": "context too long"}}]},
        {
            "match": "digest",
            "steps": [{"toolCalls": [{"name": "stamp", "args": {}}]}, {"text": "digest sent"}],
        },
    ]
}
STAMP = (
    "from fastagent_cli import tool\n\n\n@tool\ndef stamp() -> str:\n"
    '    """Record that the digest went out."""\n'
    "    open(__file__ + '.ran', 'w').close()\n    return 'stamped'\n"
)


def agent_with_schedules(make_agent: AgentFactory) -> Path:
    return make_agent(
        {
            "scripts/s.json": json.dumps(SCRIPT),
            "tools/stamp.py": STAMP,
            "schedules/digest.toml": 'cron = "0 9 * * *"\nprompt = "send the digest"\n',
            "schedules/weekly.toml": 'cron = "0 9 * * 1"\ntz = "Europe/Paris"\nprompt = "broken week"\n',
            "schedules/typo.toml": 'cron = "0 9 * * *"\npromt = "x"\n',
        },
        model="scripted/s",
        config="coding_tools = false\n",
    )


def test_fire_runs_the_turn_in_the_schedule_session(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = agent_with_schedules(make_agent)
    state = agent / ".fastagent"
    (state / "schedule").mkdir(parents=True)
    (state / "schedule" / "fires.json").write_text('{"digest": "2025-01-06T09:00:00.000Z"}')
    done = run_cli("fire", "digest", str(agent))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "digest sent\n"
    assert "[fastagent] fire: digest (session schedule:digest, scripted/s)" in done.stderr
    assert "[tool] stamp" in done.stderr
    assert (agent / "tools" / "stamp.py.ran").exists()  # the model's tool call ran
    assert find_record(state / "sessions", "schedule:digest") is not None
    assert (state / "schedule" / "fires.json").read_text() == '{"digest": "2025-01-06T09:00:00.000Z"}'
    assert not (state / "schedule" / "runs.jsonl").exists()
    assert 'warn: schedules/typo.toml: unknown key "promt"' in done.stderr


def test_fire_exits_1_when_the_turn_fails(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("fire", "weekly", str(agent_with_schedules(make_agent)))
    assert done.returncode == 1
    assert "[fastagent] failed: scripted: 400 context too long" in done.stderr


def test_an_unknown_name_lists_the_schedules_and_where_it_looked(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    agent_with_schedules(make_agent)
    done = run_cli("fire", "daily", "agent", cwd=tmp_path)
    assert done.returncode == 1
    assert (
        done.stderr
        == 'Error: unknown schedule "daily" (looked in agent/schedules). available: digest, weekly\n'
    )
    empty = make_agent(name="bare")
    (elsewhere := tmp_path / "elsewhere").mkdir()
    done = run_cli("fire", "daily", str(empty), cwd=elsewhere)
    assert (
        done.stderr == f'Error: unknown schedule "daily" (looked in {empty}/schedules). available: (none)\n'
    )


def test_a_broken_schedule_says_what_is_wrong(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("fire", "typo", str(agent_with_schedules(make_agent)))
    assert done.returncode == 1
    assert done.stderr.startswith(
        'Error: schedule "typo" cannot run: schedules/typo.toml: unknown key "promt"; did you mean "prompt"?'
    )


def test_a_missing_name_is_a_usage_error(run_cli: RunCli) -> None:
    done = run_cli("fire")
    assert done.returncode == 2
    assert "Missing argument 'NAME'" in done.stderr
