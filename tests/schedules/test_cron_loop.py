"""The cron side of the scheduler, driven by a hand-moved clock and a fake Agent (features J4-J9,
J19): claim before invoke, catch up once, no back-fire, DST, time zones, the 6 h re-read, faults."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import pytest

from fastagent_cli.definition.schedules import Schedule
from fastagent_cli.errors import ScheduleError
from fastagent_cli.schedules.cron_loop import MAX_WAIT_S
from fastagent_cli.schedules.host import ScheduleHost
from tests.schedules.helpers import CueAgent, FakeClock, at, runs_of, wait_until

Start = Callable[..., Awaitable[ScheduleHost]]


def sched(name: str, cron: str, tz: str = "UTC", prompt: str = "do it") -> Schedule:
    return Schedule(name, cron, tz, prompt, f"schedules/{name}.toml")


def fires(state: Path) -> dict[str, str]:
    data: dict[str, str] = json.loads((state / "schedule" / "fires.json").read_text())
    return data


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    hosts: list[ScheduleHost] = []

    async def make(agent: CueAgent, clock: FakeClock, *schedules: Schedule, parked: int) -> ScheduleHost:
        host = await ScheduleHost.prepare(agent, schedules, tmp_path, self_schedule=False, clock=clock)
        assert host is not None
        hosts.append(host)
        host.start()
        await clock.settle(parked)
        return host

    yield make
    for host in hosts:
        await host.stop()


async def test_a_slot_fires_once_claimed_before_the_turn(tmp_path: Path, start: Start) -> None:
    clock = FakeClock(at("2025-01-06 08:59:30"))
    agent = CueAgent()
    host = await start(agent, clock, sched("digest", "0 9 * * *"), parked=1)
    assert host.cron.next_due["digest"] == at("2025-01-06 09:00")
    await clock.advance(at("2025-01-06 09:30"), parked=1)
    assert agent.calls == [("schedule:digest", "do it")]
    assert fires(tmp_path) == {"digest": "2025-01-06T09:00:00.000Z"}
    [run] = runs_of(tmp_path)
    assert run == {
        "name": "digest",
        "session": "schedule:digest",
        "firedAt": "2025-01-06T09:00:00.000Z",
        "ms": run["ms"],
        "outcome": "completed",
        "reply": "done: do it",
        "usage": {"input": 3, "output": 2, "totalTokens": 5},
    }
    assert host.cron.next_due["digest"] == at("2025-01-07 09:00")
    await clock.advance(at("2025-01-07 08:59"), parked=1)
    assert len(agent.calls) == 1
    await clock.advance(at("2025-01-07 09:00"), parked=1)
    assert len(agent.calls) == 2


async def test_the_claim_lands_before_the_turn_and_a_restart_does_not_refire(
    tmp_path: Path, start: Start
) -> None:
    clock = FakeClock(at("2025-01-06 08:59:59"))
    agent = CueAgent(gate=asyncio.Event())
    host = await start(agent, clock, sched("digest", "0 9 * * *"), parked=1)
    await clock.advance(at("2025-01-06 09:00"), parked=0)
    await asyncio.wait_for(agent.started.wait(), 5)
    assert fires(tmp_path) == {"digest": "2025-01-06T09:00:00.000Z"}  # claimed, turn still running
    await host.stop()  # the process goes away mid-turn
    assert agent.cancelled.is_set()
    assert [r["outcome"] for r in runs_of(tmp_path)] == ["failed"]
    assert runs_of(tmp_path)[0]["error"] == "interrupted: the server stopped during the turn"

    clock.jump(at("2025-01-06 09:00:05"))  # back up five seconds later
    again = CueAgent()
    rebooted = await start(again, clock, sched("digest", "0 9 * * *"), parked=1)
    assert again.calls == []
    assert rebooted.cron.next_due["digest"] == at("2025-01-07 09:00")


async def test_catch_up_fires_once_after_a_downtime_spanning_many_slots(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "schedule").mkdir()
    (tmp_path / "schedule" / "fires.json").write_text('{"hourly": "2025-01-03T10:00:00.000Z"}')
    clock = FakeClock(at("2025-01-06 09:20"))  # 71 hourly slots were missed
    agent = CueAgent()
    with caplog.at_level(logging.INFO, "fastagent.schedule"):
        host = await start(agent, clock, sched("hourly", "0 * * * *"), parked=1)
    assert agent.calls == [("schedule:hourly", "do it")]
    assert (
        "[schedule] hourly: catching up a missed run (last fired 2025-01-03T10:00:00.000Z)" in caplog.messages
    )
    assert fires(tmp_path) == {"hourly": "2025-01-06T09:20:00.000Z"}
    assert host.cron.next_due["hourly"] == at("2025-01-06 10:00")
    await clock.advance(at("2025-01-06 09:59"), parked=1)
    assert len(agent.calls) == 1
    await clock.advance(at("2025-01-06 10:00"), parked=1)
    assert len(agent.calls) == 2


async def test_a_new_schedule_never_back_fires(tmp_path: Path, start: Start) -> None:
    (tmp_path / "schedule").mkdir()
    (tmp_path / "schedule" / "fires.json").write_text('{"other": "2025-01-01T00:00:00.000Z"}')
    clock = FakeClock(at("2025-01-06 09:30"))  # today's 09:00 passed before the file existed
    agent = CueAgent()
    host = await start(agent, clock, sched("digest", "0 9 * * *"), parked=1)
    await asyncio.sleep(0.05)
    assert agent.calls == []
    assert host.cron.next_due["digest"] == at("2025-01-07 09:00")


async def test_daylight_saving_fires_each_wall_time_once(tmp_path: Path, start: Start) -> None:
    clock = FakeClock(at("2025-11-01T12:00:00-04:00"))
    agent = CueAgent()
    await start(
        agent,
        clock,
        sched("fixed", "30 1 * * *", "America/New_York"),  # 01:30 happens twice on Nov 2
        sched("hourly", "30 * * * *", "America/New_York"),  # a wildcard hour fires in both passes
        parked=2,
    )
    await clock.advance(at("2025-11-02T03:00:00-05:00"), parked=2)
    fixed = [r["firedAt"] for r in runs_of(tmp_path, "fixed")]
    hourly = [r["firedAt"] for r in runs_of(tmp_path, "hourly")]
    assert fixed == ["2025-11-02T05:30:00.000Z"]  # 01:30 EDT, not again at 01:30 EST
    assert hourly[-4:] == [
        "2025-11-02T04:30:00.000Z",  # 00:30 EDT
        "2025-11-02T05:30:00.000Z",  # 01:30 EDT
        "2025-11-02T06:30:00.000Z",  # 01:30 EST
        "2025-11-02T07:30:00.000Z",  # 02:30 EST
    ]


async def test_a_wall_time_skipped_by_spring_forward_fires_once_after_the_gap(
    tmp_path: Path, start: Start
) -> None:
    clock = FakeClock(at("2025-03-08T12:00:00-05:00"))
    agent = CueAgent()
    await start(agent, clock, sched("early", "30 2 * * *", "America/New_York"), parked=1)
    await clock.advance(at("2025-03-10T12:00:00-04:00"), parked=1)
    assert [r["firedAt"] for r in runs_of(tmp_path)] == [
        "2025-03-09T07:00:00.000Z",  # 02:30 does not exist on Mar 9: 03:00 EDT
        "2025-03-10T06:30:00.000Z",  # 02:30 EDT
    ]


async def test_a_non_utc_zone_reads_the_cron_in_local_time(tmp_path: Path, start: Start) -> None:
    clock = FakeClock(at("2025-01-06 00:00"))
    agent = CueAgent()
    host = await start(agent, clock, sched("kolkata", "0 9 * * 1-5", "Asia/Kolkata"), parked=1)
    assert host.cron.next_due["kolkata"] == at("2025-01-06 03:30")  # 09:00 IST = 03:30 UTC
    await clock.advance(at("2025-01-11 00:00"), parked=1)  # Monday .. Friday
    assert [r["firedAt"][:16] for r in runs_of(tmp_path)] == [f"2025-01-{d:02d}T03:30" for d in range(6, 11)]


async def test_waits_are_capped_at_six_hours_and_a_long_suspend_fires_once(
    tmp_path: Path, start: Start
) -> None:
    clock = FakeClock(at("2025-01-06 10:00"))
    agent = CueAgent()
    host = await start(agent, clock, sched("digest", "0 9 * * *"), parked=1)
    assert clock.waits == [MAX_WAIT_S]  # 23 h away: wait 6 h, then read the clock again
    await clock.advance(at("2025-01-06 22:00"), parked=1)
    assert clock.waits == [MAX_WAIT_S] * 3
    clock.jump(at("2025-01-09 12:00"))  # the machine slept through three slots
    await clock.advance(timedelta(0), parked=1)  # its pending wait ends: the clock is read again
    assert [r["firedAt"] for r in runs_of(tmp_path)] == ["2025-01-09T12:00:00.000Z"]
    assert host.cron.next_due["digest"] == at("2025-01-10 09:00")
    await clock.advance(at("2025-01-10 08:59"), parked=1)
    assert len(agent.calls) == 1


async def test_a_cron_that_never_fires_is_warned_and_not_armed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(at("2025-01-06 10:00"))
    schedules = [sched("never", "0 0 30 2 *"), sched("daily", "0 9 * * *")]
    host = await ScheduleHost.prepare(CueAgent(), schedules, tmp_path, self_schedule=False, clock=clock)
    assert host is not None
    with caplog.at_level(logging.WARNING, "fastagent.schedule"):
        host.start()
    await clock.settle(1)
    assert '[schedule] never: cron "0 0 30 2 *" will never fire again — not armed' in caplog.messages
    assert set(host.cron.next_due) == {"daily"}
    await host.stop()


async def test_a_claim_that_cannot_be_written_skips_the_run_and_stays_armed(
    tmp_path: Path, start: Start
) -> None:
    clock = FakeClock(at("2025-01-06 08:59"))
    agent = CueAgent()
    await start(agent, clock, sched("digest", "0 9 * * *"), parked=1)
    (tmp_path / "schedule" / "fires.json").mkdir(parents=True)  # the claim write will fail
    await clock.advance(at("2025-01-06 09:00"), parked=1)
    assert agent.calls == []
    [run] = runs_of(tmp_path)
    assert (run["name"], run["outcome"], run["ms"]) == ("digest", "failed", 0)
    assert run["error"].startswith("run skipped — fire failed: ")
    shutil.rmtree(tmp_path / "schedule" / "fires.json")  # the disk is fixed
    await clock.advance(at("2025-01-07 09:00"), parked=1)
    assert agent.calls == [("schedule:digest", "do it")]


async def test_unreadable_claims_fail_startup(tmp_path: Path) -> None:
    (tmp_path / "schedule" / "fires.json").mkdir(parents=True)
    clock = FakeClock(at("2025-01-06 08:59"))
    with pytest.raises(ScheduleError, match=r"cannot read the schedule claims: .*fires\.json is unreadable"):
        await ScheduleHost.prepare(
            CueAgent(), [sched("d", "0 9 * * *")], tmp_path, self_schedule=False, clock=clock
        )


async def test_a_failed_turn_is_audited_and_the_schedule_goes_on(tmp_path: Path, start: Start) -> None:
    clock = FakeClock(at("2025-01-06 08:59"))
    agent = CueAgent(answer=lambda session, text: RuntimeError("model down"))
    await start(agent, clock, sched("digest", "0 9 * * *"), parked=1)
    await clock.advance(at("2025-01-07 09:00"), parked=1)
    assert [(r["outcome"], r.get("error"), "reply" in r) for r in runs_of(tmp_path)] == [
        ("failed", "model down", False),
        ("failed", "model down", False),
    ]


async def test_a_run_that_outlasts_its_next_slot_skips_it_with_a_warning(
    tmp_path: Path, start: Start, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(at("2025-01-06 08:59:30"))
    gate = asyncio.Event()
    agent = CueAgent(gate=gate)
    host = await start(agent, clock, sched("minutely", "* * * * *"), parked=1)
    await clock.advance(at("2025-01-06 09:00"), parked=0)
    await asyncio.wait_for(agent.started.wait(), 5)
    clock.jump(at("2025-01-06 09:02:10"))  # the turn takes over two minutes
    with caplog.at_level(logging.WARNING, "fastagent.schedule"):
        gate.set()
        await clock.settle(1)
    assert len(agent.calls) == 1
    assert host.cron.next_due["minutely"] == at("2025-01-06 09:03")
    assert any("outlasted its next slot (2025-01-06T09:01:00.000Z)" in m for m in caplog.messages)
    await wait_until(lambda: len(runs_of(tmp_path)) == 1)
