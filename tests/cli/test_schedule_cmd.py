"""``fastagent schedule list|history|cancel``, run as the real process, in text and JSON
(features I17-I19, J21)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AgentFactory, RunCli

WAKES = [
    {
        "id": "0b7c-one",
        "session": "telegram:42",
        "prompt": "Check whether the deploy finished and tell the user in the chat. " * 2,
        "fireAt": "2031-01-06T09:30:00.000Z",
    },
    {
        "id": "9f1e-rec",
        "session": "slack:T1:C2:1700000000.1",
        "prompt": "stand-up",
        "fireAt": "2031-01-07T08:00:00.000Z",
        "cron": "0 9 * * 1-5",
        "tz": "Europe/Paris",
    },
]


@pytest.fixture
def agent(make_agent: AgentFactory) -> Path:
    root = make_agent(
        {
            "schedules/digest.toml": 'cron = "0 9 * * *"\nprompt = "send the digest"\n',
            "schedules/paris.toml": 'cron = "30 8 * * 1-5"\ntz = "Europe/Paris"\nprompt = "bonjour"\n',
            "schedules/never.toml": 'cron = "0 0 30 2 *"\nprompt = "impossible"\n',
            "schedules/oops.toml": 'cron = "0 9 * *"\nprompt = "x"\n',
        }
    )
    (root / ".fastagent" / "schedule").mkdir(parents=True)
    return root


def write_wakes(agent: Path, wakes: list[Any]) -> None:
    (agent / ".fastagent" / "schedule" / "wakeups.json").write_text(json.dumps(wakes))


def write_runs(agent: Path, runs: list[dict[str, Any]]) -> None:
    lines = "".join(json.dumps(r) + "\n" for r in runs)
    (agent / ".fastagent" / "schedule" / "runs.jsonl").write_text(lines)


def test_list_in_text(agent: Path, run_cli: RunCli) -> None:
    write_wakes(agent, WAKES)
    done = run_cli("schedule", "list", str(agent))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"KIND +NAME +NEXT +IN +WHEN", lines[0])
    cells = [re.split(r"  +", line) for line in lines[1:]]
    assert cells[0][:2] == ["schedule", "digest"] and cells[0][4] == "cron 0 9 * * *"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d 09:00 UTC", cells[0][2])
    assert re.fullmatch(r"in (\d+ min|\d+ h( \d+ min)?|\d+ s)", cells[0][3])
    assert cells[1] == ["schedule", "never", "(never)", "cron 0 0 30 2 *"]
    # a tz schedule: local time in its own zone (08:30 in Paris, not 06:30/07:30 UTC)
    assert cells[2][:2] == ["schedule", "paris"] and cells[2][4] == "cron 30 8 * * 1-5 Europe/Paris"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d 08:30 CES?T", cells[2][2])
    assert cells[3][:3] == ["wake", "0b7c-one", "2031-01-06 09:30 UTC"]
    assert re.fullmatch(r"in \d+ d( \d+ h)?", cells[3][3])
    assert cells[3][4:] == [
        "one-shot",
        "session=telegram:42",
        "Check whether the deploy finished and tell the user in the c",
    ]
    assert cells[4][:3] == ["wake", "9f1e-rec", "2031-01-07 09:00 CET"]
    assert cells[4][4:] == ["cron 0 9 * * 1-5 Europe/Paris", "session=slack:T1:C2:1700000000.1", "stand-up"]
    assert len(lines) == 6
    assert '[fastagent] warn: schedules/oops.toml: cron "0 9 * *" has 4 field(s)' in done.stderr


def test_list_says_how_soon_in_minutes(make_agent: AgentFactory, run_cli: RunCli) -> None:
    from datetime import UTC, datetime, timedelta

    soon = (datetime.now(UTC) + timedelta(minutes=3, seconds=30)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    agent = make_agent({"schedules/.keep": ""})
    (agent / ".fastagent" / "schedule").mkdir(parents=True)
    write_wakes(agent, [{"id": "w1", "session": "s", "prompt": "ping", "fireAt": soon}])
    lines = run_cli("schedule", "list", str(agent)).stdout.splitlines()
    assert re.split(r"  +", lines[1])[3] in ("in 3 min", "in 2 min")  # a slow machine loses seconds


def test_list_in_json(agent: Path, run_cli: RunCli) -> None:
    write_wakes(agent, [*WAKES, {"id": "broken"}])
    done = run_cli("schedule", "list", str(agent), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert list(doc) == ["schedules", "wakeups", "scheduleFailures"]
    assert [(s["name"], s["cron"], s["tz"], s["prompt"]) for s in doc["schedules"]] == [
        ("digest", "0 9 * * *", "UTC", "send the digest"),
        ("never", "0 0 30 2 *", "UTC", "impossible"),
        ("paris", "30 8 * * 1-5", "Europe/Paris", "bonjour"),
    ]
    assert doc["schedules"][1]["next"] is None
    assert doc["wakeups"] == WAKES
    assert doc["scheduleFailures"] == [
        {
            "file": "schedules/oops.toml",
            "error": 'cron "0 9 * *" has 4 field(s); it needs 5 (minute hour day-of-month month day-of-week)',
        }
    ]
    assert "WARN  [schedule] dropping a malformed wake-up entry (session is missing" in done.stderr


def test_list_with_nothing_scheduled(make_agent: AgentFactory, run_cli: RunCli) -> None:
    bare = make_agent()
    done = run_cli("schedule", "list", str(bare))
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (
        f"nothing scheduled — no schedules/ files, no pending wake-ups (state: {bare / '.fastagent'})\n"
    )
    assert not (bare / ".fastagent").exists()  # reading creates nothing
    assert json.loads(run_cli("schedule", "list", str(bare), "--json").stdout) == {
        "schedules": [],
        "wakeups": [],
        "scheduleFailures": [],
    }


def test_history_shows_the_last_twenty_runs(agent: Path, run_cli: RunCli) -> None:
    runs = [
        {
            "name": "digest",
            "session": "schedule:digest",
            "firedAt": f"2025-01-{d:02d}T09:00:00.000Z",
            "ms": 1200 + d,
            "outcome": "completed",
            "reply": f"Sent digest {d}.\n" + "x" * 200,
        }
        for d in range(1, 25)
    ]
    runs.insert(
        3,
        {
            "name": "paris",
            "session": "schedule:paris",
            "firedAt": "2025-01-03T07:30:00.000Z",
            "ms": 5,
            "outcome": "completed",
            "reply": "bonjour",
        },
    )
    runs.append(
        {
            "name": "digest",
            "session": "schedule:digest",
            "firedAt": "2025-01-25T09:00:00.000Z",
            "ms": 0,
            "outcome": "failed",
            "error": "run skipped — fire failed: disk full",
        }
    )
    write_runs(agent, runs)
    done = run_cli("schedule", "history", "digest", str(agent))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 20
    assert lines[0] == "2025-01-06T09:00:00.000Z  completed   1206ms  Sent digest 6. " + "x" * 85
    assert lines[-1] == "2025-01-25T09:00:00.000Z  failed         0ms  run skipped — fire failed: disk full"
    assert done.stderr == "(the last 20 of 25 runs; --json prints them all)\n"
    full = json.loads(run_cli("schedule", "history", "digest", str(agent), "--json").stdout)
    assert len(full) == 25 and full[0] == runs[0]


def test_history_of_wakes_and_of_nothing(agent: Path, run_cli: RunCli) -> None:
    write_runs(
        agent,
        [
            {
                "name": "wake",
                "session": "telegram:42",
                "firedAt": "2025-01-06T09:30:00.000Z",
                "ms": 0,
                "outcome": "deferred",
                "id": "0b7c-one",
            },
        ],
    )
    done = run_cli("schedule", "history", "wake", str(agent))
    assert done.stdout == "2025-01-06T09:30:00.000Z  deferred       0ms\n"
    none = run_cli("schedule", "history", "paris", str(agent))
    assert (none.returncode, none.stdout) == (0, "")
    assert none.stderr == f'no runs recorded for "paris" (state: {agent / ".fastagent"})\n'
    typo = run_cli("schedule", "history", "digets", str(agent))
    assert typo.stderr.endswith("; known names: digest, never, paris, wake\n")
    assert run_cli("schedule", "history", "paris", str(agent), "--json").stdout == "[]\n"


def test_cancel_removes_any_sessions_wake(agent: Path, run_cli: RunCli) -> None:
    write_wakes(agent, WAKES)
    done = run_cli("schedule", "cancel", "9f1e-rec", str(agent))
    assert done.returncode == 0, done.stderr
    assert done.stderr == "[fastagent] cancelled wake-up 9f1e-rec\n"
    left = json.loads((agent / ".fastagent" / "schedule" / "wakeups.json").read_text())
    assert [w["id"] for w in left] == ["0b7c-one"]
    done = run_cli("schedule", "cancel", "0b7c-one", str(agent), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"cancelled": WAKES[0]}
    assert json.loads((agent / ".fastagent" / "schedule" / "wakeups.json").read_text()) == []


def test_cancel_of_an_unknown_id_exits_1(agent: Path, run_cli: RunCli) -> None:
    write_wakes(agent, WAKES)
    done = run_cli("schedule", "cancel", "nope", str(agent))
    assert done.returncode == 1
    state = agent / ".fastagent"
    assert (
        done.stderr
        == f"Error: no pending wake-up nope (state: {state}) — `fastagent schedule list` shows ids\n"
    )
    missing = run_cli("schedule", "cancel")
    assert missing.returncode == 2 and "Missing argument 'ID'" in missing.stderr


def test_the_group_needs_a_subcommand(run_cli: RunCli) -> None:
    done = run_cli("schedule", "lst")
    assert done.returncode == 2
    assert "No such command 'lst'" in done.stderr
