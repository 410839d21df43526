"""The scheduler inside the real ``fastagent start`` / ``dev`` process. ``FASTAGENT_CLOCK_OFFSET``
moves the process clock to seconds before a 09:00 slot, so nothing waits for a real one.

* a slot fires, the scripted model's reply calls a tool, ``runs.jsonl`` holds the completed run;
* ``kill -9`` mid-turn, restart: the claimed slot does not fire again;
* a downtime spanning many slots: one catch-up run;
* ``dev`` restarting its worker mid-turn does not fire the slot twice.
"""

from __future__ import annotations

import json
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AgentFactory
from tests.serving.serving_proc import ServerProcess

pytestmark = pytest.mark.slow

LOCAL = ("--port", "0", "--bind", "127.0.0.1")
SCRIPT = {
    "rules": [
        {
            "match": "digest",
            "steps": [{"toolCalls": [{"name": "stamp", "args": {"label": "digest"}}]}, {"text": "sent"}],
        },
        {"match": "slow", "steps": [{"delayMs": 120000, "text": "too late"}]},
    ]
}
STAMP = (
    "from pathlib import Path\n\nfrom fastagent_cli import tool\n\n\n@tool\n"
    "def stamp(label: str) -> str:\n"
    '    """Leave a mark that the scheduled job ran."""\n'
    "    (Path(__file__).parent.parent / f'{label}.done').write_text('ok')\n"
    "    return 'stamped ' + label\n"
)


def next_nine() -> datetime:
    now = datetime.now(UTC)
    slot = now.replace(hour=9, minute=0, second=0, microsecond=0)
    return slot if slot > now else slot + timedelta(days=1)


def clock_env(slot: datetime, lead_s: float) -> dict[str, str]:
    """Environment putting the process clock ``lead_s`` seconds before ``slot``."""
    offset = slot.timestamp() - lead_s - time.time()
    return {"FASTAGENT_CLOCK_OFFSET": f"{offset:.3f}", "FASTAGENT_LOG_LEVEL": "debug"}


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


@pytest.fixture
def agent(make_agent: AgentFactory) -> Path:
    return make_agent(
        {"scripts/s.json": json.dumps(SCRIPT), "tools/stamp.py": STAMP},
        model="scripted/s",
        config="coding_tools = false\n",
    )


def schedule(agent: Path, name: str, prompt: str, cron: str = "0 9 * * *") -> None:
    (agent / "schedules").mkdir(exist_ok=True)
    (agent / "schedules" / f"{name}.toml").write_text(f'cron = "{cron}"\nprompt = "{prompt}"\n')


def claims(agent: Path) -> dict[str, str]:
    data: dict[str, str] = json.loads((agent / ".fastagent" / "schedule" / "fires.json").read_text())
    return data


def runs(agent: Path) -> list[dict[str, Any]]:
    path = agent / ".fastagent" / "schedule" / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def claim_yesterday(agent: Path, name: str, slot: datetime) -> None:
    (agent / ".fastagent" / "schedule").mkdir(parents=True, exist_ok=True)
    (agent / ".fastagent" / "schedule" / "fires.json").write_text(
        json.dumps({name: iso(slot - timedelta(days=1))})
    )


async def test_start_fires_a_slot_whose_model_calls_a_tool(agent: Path) -> None:
    schedule(agent, "digest", "send the digest")
    slot = next_nine()
    claim_yesterday(agent, "digest", slot)  # a start slower than the lead still fires (a catch-up)
    async with ServerProcess.spawn("start", str(agent), *LOCAL, env=clock_env(slot, 5)) as server:
        await server.port()
        assert "INFO  [fastagent] schedules: digest" in server.text
        await server.wait_for(r"\[schedule\] digest completed \(\d+ms\)", within=30)
        [run] = runs(agent)
        assert {k: run[k] for k in ("name", "session", "outcome", "reply")} == {
            "name": "digest",
            "session": "schedule:digest",
            "outcome": "completed",
            "reply": "sent",
        }
        assert run["firedAt"] >= iso(slot) and run["usage"]["totalTokens"] > 0
        assert (agent / "digest.done").read_text() == "ok"  # the tool the model called ran
        assert claims(agent)["digest"] == run["firedAt"]
        assert "Traceback" not in server.text


async def test_kill_9_mid_turn_does_not_fire_the_slot_again(agent: Path) -> None:
    schedule(agent, "daily", "slow report")
    slot = next_nine()
    claim_yesterday(agent, "daily", slot)  # without claim-before-invoke, a restart would catch up
    env = clock_env(slot, 3)
    server = await ServerProcess.start("start", str(agent), *LOCAL, env=env)
    try:
        await server.wait_for(r"\[schedule\] daily firing \(session=schedule:daily\)", within=30)
        claimed = claims(agent)["daily"]
        assert claimed >= iso(slot)  # recorded before the turn started
        server.send(signal.SIGKILL)
        assert await server.wait() == -signal.SIGKILL
    finally:
        await server.aclose()
    assert runs(agent) == []  # no time to audit anything

    async with ServerProcess.spawn("start", str(agent), *LOCAL, env=env) as again:
        await again.port()
        armed = await again.wait_for(r"\[schedule\] daily: next run at (\S+)", within=30)
        assert armed.group(1) == iso(slot + timedelta(days=1))
        assert again.count(r"daily firing") == 0 and again.count("catching up") == 0
    assert claims(agent)["daily"] == claimed


async def test_a_downtime_spanning_many_slots_catches_up_once(agent: Path) -> None:
    schedule(agent, "hourly", "send the digest", cron="0 * * * *")
    (agent / ".fastagent" / "schedule").mkdir(parents=True)
    three_days_ago = datetime.now(UTC) - timedelta(days=3)
    (agent / ".fastagent" / "schedule" / "fires.json").write_text(json.dumps({"hourly": iso(three_days_ago)}))
    async with ServerProcess.spawn("start", str(agent), *LOCAL) as server:
        await server.port()
        await server.wait_for(r"\[schedule\] hourly: catching up a missed run", within=30)
        await server.wait_for(r"\[schedule\] hourly completed", within=30)
        assert server.count(r"hourly firing") == 1
    assert [r["outcome"] for r in runs(agent)] == ["completed"]


async def test_a_dev_restart_mid_turn_does_not_fire_the_slot_twice(agent: Path) -> None:
    schedule(agent, "daily", "slow report")
    slot = next_nine()
    claim_yesterday(agent, "daily", slot)
    async with ServerProcess.spawn("dev", str(agent), *LOCAL, env=clock_env(slot, 3)) as dev:
        await dev.wait_for(r"\[schedule\] daily firing", within=30)  # the slot, or its catch-up if slow
        mark = len(dev.lines)
        schedule(agent, "weekly", "send the digest", cron="0 9 * * 1")
        await dev.wait_for(r"\[schedule\] weekly: next run at", after=mark, within=30)  # the new worker
        armed = await dev.wait_for(r"\[schedule\] daily: next run at (\S+)", after=mark, within=30)
        assert armed.group(1) == iso(slot + timedelta(days=1))
        assert dev.count(r"daily firing") == 1
        assert not [line for line in dev.lines[mark:] if "catching up" in line]
    interrupted = [r for r in runs(agent) if r["name"] == "daily"]
    assert [(r["outcome"], r["error"]) for r in interrupted] == [
        ("failed", "interrupted: the server stopped during the turn")
    ]
