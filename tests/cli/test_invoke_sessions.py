"""Continuing a conversation from the command line, as a user meets it: ``invoke`` names its
session, ``--continue`` picks the last one, and an explicit ``--model`` runs (and sticks) even when
the session chose another model in chat."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import AgentFactory, RunCli, find_record, record_file

SLOW = {"steps": [{"text": "the slow model answers", "delayMs": 20}]}


def _session_id(stderr: str) -> str:
    found = re.search(r"^\[fastagent\] session: (\S+)$", stderr, re.M)
    assert found is not None, stderr
    return found.group(1)


def _entries(agent: Path, session: str) -> list[dict[str, object]]:
    path = record_file(agent / ".fastagent" / "sessions", session)
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def _model_changes(agent: Path, session: str) -> list[str]:
    return [
        f"{e['provider']}/{e['modelId']}" for e in _entries(agent, session) if e["type"] == "model_change"
    ]


def test_invoke_names_its_session_and_continue_picks_it_up(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()
    first = run_cli("invoke", "first", str(agent))
    assert first.returncode == 0, first.stderr
    session = _session_id(first.stderr)
    again = run_cli("invoke", "second", str(agent), "--continue")
    assert (again.returncode, again.stdout) == (0, "echo: second\n")
    assert _session_id(again.stderr) == session
    texts = [e["message"]["content"][0]["text"] for e in _entries(agent, session) if e["type"] == "message"]
    assert texts == ["first", "echo: first", "second", "echo: second"]
    named = run_cli("invoke", "third", str(agent), "--session", session, "--json")
    lines = [json.loads(line) for line in named.stdout.splitlines()]
    assert lines[0] == {"type": "session", "session": session, "model": "scripted/echo"}
    assert lines[-1]["type"] == "completed"


def test_continue_without_sessions_starts_one_and_conflicts_are_usage_errors(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent()
    fresh = run_cli("invoke", "hi", str(agent), "--continue")
    assert fresh.returncode == 0
    assert "[fastagent] no sessions yet in" in fresh.stderr and ": starting a new one" in fresh.stderr
    both = run_cli("invoke", "hi", str(agent), "--continue", "--session", "s1")
    assert both.returncode == 2
    assert "--session and --continue are mutually exclusive" in both.stderr


def test_an_explicit_model_wins_over_the_one_chat_chose_and_sticks(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent({"scripts/slow.json": json.dumps(SLOW)})
    chat = run_cli("chat", str(agent), "--session", "X", input="/model scripted/slow\nhello\n")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout == "the slow model answers\n"

    plain = run_cli("invoke", "without a flag", str(agent), "--session", "X")
    assert "(workspace" in plain.stderr and ", scripted/slow)" in plain.stderr  # the session's model
    assert plain.stdout == "the slow model answers\n"

    flagged = run_cli("invoke", "hi", str(agent), "--session", "X", "--model", "scripted/echo")
    assert flagged.returncode == 0, flagged.stderr
    assert ", scripted/echo)" in flagged.stderr
    assert flagged.stdout == "echo: hi\n"  # what runs is what the header says
    assert _model_changes(agent, "X") == ["scripted/slow", "scripted/echo"]

    later = run_cli("invoke", "later", str(agent), "--session", "X")
    assert later.stdout == "echo: later\n"  # recorded as the session's model
    same = run_cli("invoke", "again", str(agent), "--session", "X", "--model", "scripted/echo")
    assert same.stdout == "echo: again\n"
    assert _model_changes(agent, "X") == ["scripted/slow", "scripted/echo"]  # no duplicate entry


def test_chat_continue_with_a_model_runs_that_model(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"scripts/slow.json": json.dumps(SLOW)})
    run_cli("chat", str(agent), "--session", "Y", input="/model scripted/slow\nhello\n")
    resumed = run_cli("chat", str(agent), "--continue", "--model", "scripted/echo", input="are you echo?\n")
    assert resumed.returncode == 0, resumed.stderr
    assert "scripted/echo · session Y (resumed" in resumed.stderr
    assert resumed.stdout == "echo: are you echo?\n"
    assert _model_changes(agent, "Y") == ["scripted/slow", "scripted/echo"]


def test_a_new_chat_session_records_an_explicit_model_with_its_first_turn(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent({"scripts/slow.json": json.dumps(SLOW)})
    run_cli("chat", str(agent), "--session", "Z", "--model", "scripted/slow", input="hi\n")
    assert _model_changes(agent, "Z") == ["scripted/slow"]
    later = run_cli("chat", str(agent), "--session", "Z", input="still slow?\n")
    assert later.stdout == "the slow model answers\n"
    untouched = run_cli("chat", str(agent), "--session", "W", "--model", "scripted/slow", input="/exit\n")
    assert untouched.returncode == 0
    assert find_record(agent / ".fastagent" / "sessions", "W") is None  # nothing written without a turn
