"""The wake-up poll (features J14-J16): the envelope, one at a time into the originating session,
busy one-shots deferred (up to 120 times) then fired, busy recurring occurrences skipped, other
failures never replayed; and a real engine whose model calls ``wake``."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from pathlib import Path

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import collect
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.schedules.host import ScheduleHost
from fastagent_cli.schedules.wake_poll import MAX_WAKE_ATTEMPTS, WakePoll, wake_envelope
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.state.claims import Wakeup, open_schedule_claims
from fastagent_cli.state.run_log import RunLog
from fastagent_cli.tools.wake import make_wake_tools
from tests.schedules.helpers import CueAgent, FakeClock, at, runs_of, wait_until

NOW = at("2025-01-06 09:00")


def poller(tmp_path: Path, agent: CueAgent, clock: FakeClock) -> WakePoll:
    return WakePoll(agent, open_schedule_claims(tmp_path), RunLog(tmp_path / "schedule"), clock)


async def add(tmp_path: Path, *wakes: Wakeup) -> None:
    for wake in wakes:
        await open_schedule_claims(tmp_path).put_wakeup(wake)


def test_the_envelope_tells_the_model_it_is_its_own_alarm() -> None:
    one = Wakeup("abc", "s", "check the oven", NOW)
    assert wake_envelope(one) == (
        "[wake-up abc fired — YOUR self-scheduled turn, not a user message] check the oven"
    )
    every = Wakeup("r1", "s", "stand-up", NOW, "0 9 * * 1-5", "Europe/Paris")
    assert wake_envelope(every) == (
        '[wake-up r1 fired — YOUR recurring self-scheduled turn (cron "0 9 * * 1-5" Europe/Paris), '
        'not a user message; unwake({ id: "r1" }) stops it] stand-up'
    )


async def test_a_due_one_shot_fires_into_its_session_once(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    agent = CueAgent()
    await add(tmp_path, Wakeup("w1", "chat-7", "check the oven", NOW + timedelta(minutes=5)))
    poll = poller(tmp_path, agent, clock)
    assert await poll.poll() == 0
    clock.jump(NOW + timedelta(minutes=5))
    assert await poll.poll() == 1
    assert agent.calls == [("chat-7", wake_envelope(Wakeup("w1", "chat-7", "check the oven", NOW)))]
    assert await open_schedule_claims(tmp_path).wakeups() == []
    [run] = runs_of(tmp_path, "wake")
    assert {k: run[k] for k in ("name", "session", "firedAt", "outcome", "id", "reply")} == {
        "name": "wake",
        "session": "chat-7",
        "firedAt": "2025-01-06T09:05:00.000Z",
        "outcome": "completed",
        "id": "w1",
        "reply": agent.answer("", wake_envelope(Wakeup("w1", "chat-7", "check the oven", NOW))),
    }
    assert await poll.poll() == 0


async def test_a_recurring_wake_fires_and_stays_with_its_next_instant(tmp_path: Path) -> None:
    clock = FakeClock(at("2025-01-06 09:00:10"))
    agent = CueAgent()
    await add(tmp_path, Wakeup("r1", "chat", "stand-up", NOW, "0 9 * * *"))
    await poller(tmp_path, agent, clock).poll()
    assert len(agent.calls) == 1 and "YOUR recurring self-scheduled turn" in agent.calls[0][1]
    [kept] = await open_schedule_claims(tmp_path).wakeups()
    assert (kept.id, kept.fire_at) == ("r1", at("2025-01-07 09:00"))


async def test_due_wakes_fire_one_at_a_time(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    gate = asyncio.Event()
    agent = CueAgent(gate=gate)
    await add(tmp_path, Wakeup("a", "s1", "first", NOW), Wakeup("b", "s2", "second", NOW))
    polling = asyncio.create_task(poller(tmp_path, agent, clock).poll())
    await asyncio.wait_for(agent.started.wait(), 5)
    assert [w.id for w in await open_schedule_claims(tmp_path).wakeups()] == ["b"]  # not claimed yet
    gate.set()
    assert await polling == 2
    assert [session for session, _ in agent.calls] == ["s1", "s2"]


async def test_a_busy_one_shot_is_deferred_then_fired(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    busy = {"chat"}
    agent = CueAgent(answer=lambda session, text: "busy" if session in busy else "done")
    await add(tmp_path, Wakeup("w1", "chat", "follow up", NOW))
    poll = poller(tmp_path, agent, clock)
    await poll.poll()
    [deferred] = await open_schedule_claims(tmp_path).wakeups()
    assert (deferred.attempts, deferred.fire_at) == (1, NOW + timedelta(seconds=30))
    assert agent.calls == []
    busy.clear()  # the channel's turn ended
    clock.jump(NOW + timedelta(seconds=30))
    await poll.poll()
    assert agent.calls == [("chat", wake_envelope(deferred))]
    assert [(r["outcome"], r.get("error")) for r in runs_of(tmp_path, "wake")] == [
        ("deferred", None),
        ("completed", None),
    ]
    assert await open_schedule_claims(tmp_path).wakeups() == []


async def test_a_one_shot_busy_too_long_is_dropped_and_audited(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    agent = CueAgent(answer=lambda session, text: "busy")
    await add(tmp_path, Wakeup("w1", "chat", "follow up", NOW, attempts=MAX_WAKE_ATTEMPTS - 1))
    poll = poller(tmp_path, agent, clock)
    await poll.poll()
    assert [w.attempts for w in await open_schedule_claims(tmp_path).wakeups()] == [MAX_WAKE_ATTEMPTS]
    clock.jump(NOW + timedelta(seconds=30))
    await poll.poll()
    assert await open_schedule_claims(tmp_path).wakeups() == []
    assert [(r["outcome"], r.get("error")) for r in runs_of(tmp_path, "wake")] == [
        ("deferred", None),
        ("failed", "dropped after too many busy retries"),
    ]


async def test_a_busy_recurring_occurrence_is_skipped(tmp_path: Path) -> None:
    clock = FakeClock(at("2025-01-06 09:00:05"))
    agent = CueAgent(answer=lambda session, text: "busy")
    await add(tmp_path, Wakeup("r1", "chat", "stand-up", NOW, "0 9 * * *"))
    await poller(tmp_path, agent, clock).poll()
    [kept] = await open_schedule_claims(tmp_path).wakeups()
    assert (kept.fire_at, kept.attempts) == (at("2025-01-07 09:00"), 0)
    [run] = runs_of(tmp_path, "wake")
    assert (run["outcome"], run["error"]) == (
        "failed",
        "occurrence skipped (session busy); the recurrence continues",
    )


async def test_any_other_failure_is_final(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    agent = CueAgent(answer=lambda session, text: RuntimeError("tool exploded"))
    await add(tmp_path, Wakeup("w1", "chat", "send the report", NOW))
    poll = poller(tmp_path, agent, clock)
    await poll.poll()
    clock.jump(NOW + timedelta(hours=1))
    await poll.poll()
    assert len(agent.calls) == 1  # never replayed: its tools may already have acted
    assert [(r["outcome"], r["error"]) for r in runs_of(tmp_path, "wake")] == [("failed", "tool exploded")]


async def test_a_storage_fault_is_logged_and_the_next_poll_retries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "schedule" / "wakeups.json").mkdir(parents=True)
    poll = poller(tmp_path, CueAgent(), FakeClock(NOW))
    with caplog.at_level(logging.ERROR, "fastagent.schedule"):
        assert await poll.poll() == 0
    assert any(
        m.startswith("[schedule] wake-up poll failed (continuing next poll): ") for m in caplog.messages
    )


async def test_the_host_polls_every_thirty_seconds(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    agent = CueAgent()
    await add(tmp_path, Wakeup("w1", "chat", "later", NOW + timedelta(seconds=45)))
    host = await ScheduleHost.prepare(agent, [], tmp_path, self_schedule=True, clock=clock)
    assert host is not None and host.startup_lines() == [
        "wake-ups:  1 pending (self_schedule; polled every 30s)"
    ]
    host.start()
    try:
        await clock.settle(1)
        await clock.advance(timedelta(seconds=30), parked=1)
        assert agent.calls == []
        await clock.advance(timedelta(seconds=30), parked=1)
        assert [s for s, _ in agent.calls] == ["chat"]
        assert set(clock.waits) == {30.0}
    finally:
        await host.stop()


async def test_pending_wakes_do_not_fire_while_self_schedule_is_off(tmp_path: Path) -> None:
    await add(tmp_path, Wakeup("w1", "chat", "later", NOW))
    host = await ScheduleHost.prepare(CueAgent(), [], tmp_path, self_schedule=False, clock=FakeClock(NOW))
    assert host is not None and host.wakes is None and host.startup_lines() == []
    assert host.warnings == [
        f"1 pending wake-up(s) in {tmp_path / 'schedule' / 'wakeups.json'} will not fire while self_schedule "
        "is off (`fastagent schedule list` shows them, `fastagent schedule cancel <id>` removes one)"
    ]
    assert await ScheduleHost.prepare(CueAgent(), [], tmp_path / "empty", self_schedule=False) is None


async def test_a_real_engine_wakes_itself_and_resumes_the_same_conversation(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    claims = open_schedule_claims(tmp_path / "state")
    model = ScriptedModel.from_script(
        {
            "rules": [
                {"match": "/fired — YOUR self-scheduled turn/", "steps": [{"text": "The oven is off now."}]},
                {
                    "match": "remind",
                    "steps": [
                        {"toolCalls": [{"name": "wake", "args": {"in": "2m", "prompt": "check the oven"}}]},
                        {"text": "I will check in two minutes."},
                    ],
                },
            ]
        }
    )
    store = FileSessionStore(tmp_path / "sessions", tmp_path)
    agent = create_agent(model=model, tools=make_wake_tools(claims, clock), sessions=store, cwd=tmp_path)
    assert (
        await collect(agent.invoke("kitchen", "remind me about the oven"))
    ).text == "I will check in two minutes."
    [wake] = await claims.wakeups()
    assert (wake.session, wake.prompt, wake.fire_at) == (
        "kitchen",
        "check the oven",
        NOW + timedelta(minutes=2),
    )

    poll = WakePoll(agent, claims, RunLog(tmp_path / "state" / "schedule"), clock)
    clock.jump(NOW + timedelta(minutes=2))
    release = store.try_lease("kitchen")  # a channel turn holds the conversation
    assert release is not None
    await poll.poll()
    assert [w.attempts for w in await claims.wakeups()] == [1]
    release()
    clock.jump(NOW + timedelta(minutes=2, seconds=30))
    await poll.poll()
    await wait_until(lambda: len(runs_of(tmp_path / "state", "wake")) == 2)
    assert [r["outcome"] for r in runs_of(tmp_path / "state", "wake")] == ["deferred", "completed"]
    assert runs_of(tmp_path / "state", "wake")[1]["reply"] == "The oven is off now."
    path = store.location("kitchen")
    assert path is not None
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    users = [e["message"]["content"][0]["text"] for e in lines if e.get("message", {}).get("role") == "user"]
    assert users == [
        "remind me about the oven",
        f"[wake-up {wake.id} fired — YOUR self-scheduled turn, not a user message] check the oven",
    ]
