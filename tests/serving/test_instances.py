"""Several real ``fastagent start`` processes sharing one real PostgreSQL (``state_backend =
"postgres"``): one session hit on two instances at once gets exactly one ``session_busy``; a
``kill -9`` of the instance holding a session's lease frees it for the others within seconds; a
cron slot fires once across three instances; an ``events`` watcher on one instance sees a run
driven on another, whose state reads ``running`` there and which an abort sent there stops; an
unreachable database fails startup with one line."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from fastagent_cli.contract import Completed, Failed
from tests.conftest import AgentFactory, RunCli
from tests.serving.serving_proc import ServerProcess, answer, free_port, invoke

LOCAL = ("--port", "0", "--bind", "127.0.0.1")
SLOW = {"rules": [{"match": "slow", "steps": [{"text": "took a while", "delayMs": 3000}]},
                  {"match": "forever", "steps": [{"text": "never", "delayMs": 120000}]},
                  {"steps": [{"text": "quick answer"}]}]}  # fmt: skip
TOKEN = "instances-test-token"


@pytest.fixture
def shared_agent(make_agent: AgentFactory, database_url: str, tmp_path: Path) -> Callable[..., Any]:
    agent = make_agent(
        {"scripts/slow.json": json.dumps(SLOW)},
        model="scripted/slow",
        config='state_backend = "postgres"\nsession_control = true\n',
    )

    @contextlib.asynccontextmanager
    async def instance(name: str, **extra: str) -> AsyncIterator[ServerProcess]:
        env = {
            "FASTAGENT_DATABASE_URL": database_url,
            "FASTAGENT_STATE_DIR": str(tmp_path / f"state-{name}"),  # as on separate machines
            "FASTAGENT_CONTROL_TOKEN": TOKEN,
            **extra,
        }
        async with ServerProcess.spawn("start", str(agent), *LOCAL, env=env) as server:
            yield server

    instance.agent = agent  # type: ignore[attr-defined]
    return instance


async def session_state(port: int, session: str, status: str, within: float = 30) -> dict[str, Any]:
    """The control plane's ``state()`` of ``session`` on the instance at ``port``, once it reads
    ``status``."""
    url = f"http://127.0.0.1:{port}/control/sessions/{session}"
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        while True:
            async with http.get(url, headers={"Authorization": f"Bearer {TOKEN}"}) as resp:
                state: dict[str, Any] = await resp.json()
            if state.get("status") == status:
                return state
            assert time.monotonic() < deadline, state
            await asyncio.sleep(0.1)


@pytest.mark.timeout(120)
async def test_one_session_hit_on_two_instances_gets_exactly_one_session_busy(
    shared_agent: Callable[..., Any], database_url: str
) -> None:
    async with shared_agent("a") as a, shared_agent("b") as b:
        pa, pb = await a.port(), await b.port()
        assert "state:     postgres postgresql://fastagent@127.0.0.1" in a.text
        results = await asyncio.gather(invoke(pa, "shared", "slow one"), invoke(pb, "shared", "slow two"))
        ends = [events[-1] for events in results]
        busy = [e for e in ends if isinstance(e, Failed) and e.code == "session_busy"]
        done = [e for e in ends if isinstance(e, Completed)]
        assert len(busy) == 1 and len(done) == 1, ends
        assert busy[0].retryable
        # the session continues on either instance, one history
        assert answer(await invoke(pb, "shared", "hi")) == "quick answer"
        assert answer(await invoke(pa, "shared", "hi again")) == "quick answer"
    conn = await asyncpg.connect(database_url)
    try:
        count = await conn.fetchval("SELECT message_count FROM fastagent_sessions WHERE session = 'shared'")
    finally:
        await conn.close()
    assert count == 6  # three turns, one user message and one answer each


@pytest.mark.timeout(120)
async def test_kill_9_of_the_lease_holder_frees_the_session_within_seconds(
    shared_agent: Callable[..., Any],
) -> None:
    async with shared_agent("a") as a, shared_agent("b") as b:
        pa, pb = await a.port(), await b.port()
        stuck = asyncio.create_task(invoke(pa, "held", "forever"))
        await session_state(pb, "held", "running")  # a's turn holds the lease (b hears of its run)
        events = await invoke(pb, "held", "hi")
        assert isinstance(events[-1], Failed) and events[-1].code == "session_busy", events
        a.send(signal.SIGKILL)
        killed = time.monotonic()
        with contextlib.suppress(aiohttp.ClientError, AssertionError):
            await stuck
        while True:
            events = await invoke(pb, "held", "hi")
            if isinstance(events[-1], Completed):
                break
            assert isinstance(events[-1], Failed) and events[-1].code == "session_busy", events
            assert time.monotonic() - killed < 10, "the killed instance's lease was never freed"
            await asyncio.sleep(0.1)
        freed_after = time.monotonic() - killed
    assert freed_after < 10
    assert answer(events) == "quick answer"


def _next_minute(after: datetime) -> datetime:
    return after.replace(second=0, microsecond=0) + timedelta(minutes=1)


def _count(lines: list[str], pattern: str) -> int:
    compiled = re.compile(pattern)
    return sum(1 for line in lines if compiled.search(line))


@pytest.mark.timeout(180)  # waits for the next minute's slot
async def test_a_cron_slot_fires_once_across_three_instances(
    make_agent: AgentFactory, database_url: str, tmp_path: Path
) -> None:
    agent = make_agent(
        {"schedules/tick.toml": 'cron = "* * * * *"\nprompt = "tick"\n'},
        config='state_backend = "postgres"\n',
    )
    servers: list[ServerProcess] = []
    try:
        for name in ("a", "b", "c"):
            env = {"FASTAGENT_DATABASE_URL": database_url, "FASTAGENT_STATE_DIR": str(tmp_path / name)}
            servers.append(await ServerProcess.start("start", str(agent), *LOCAL, env=env))
        for server in servers:
            await server.port(within=60)
        # Start-up can straddle a minute (one instance up and firing before the others are):
        # count only a slot all three were armed for, well after the last came up.
        slot = _next_minute(datetime.now(UTC) + timedelta(seconds=5))
        await asyncio.sleep((slot - datetime.now(UTC)).total_seconds() - 2)
        marks = [len(s.lines) for s in servers]
        for server, mark in zip(servers, marks, strict=True):
            await server.wait_for(
                r"\[schedule\] tick( firing|: the slot at .* was claimed by another)", after=mark, within=90
            )
        await asyncio.sleep(1)
        fired = sum(
            _count(s.lines[m:], r"\[schedule\] tick firing") for s, m in zip(servers, marks, strict=True)
        )
        stamp = slot.strftime("%Y-%m-%dT%H:%M:00.000Z")
        skipped = sum(
            _count(s.lines[m:], rf"\[schedule\] tick: the slot at {stamp} was claimed by another instance")
            for s, m in zip(servers, marks, strict=True)
        )
        fired_in_all = sum(s.count(r"\[schedule\] tick firing") for s in servers)
    finally:
        for server in servers:
            await server.aclose()
    assert (fired, skipped) == (1, 2), "\n---\n".join(s.text for s in servers)
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT session, message_count FROM fastagent_sessions")
    finally:
        await conn.close()
    # every fire, counted slot or earlier, ran one turn: prompt and answer each
    assert [(r["session"], r["message_count"]) for r in rows] == [("schedule:tick", 2 * fired_in_all)]


@pytest.mark.timeout(120)
async def test_an_events_watcher_on_one_instance_sees_a_run_on_another(
    shared_agent: Callable[..., Any],
) -> None:
    async with shared_agent("a") as a, shared_agent("b") as b:
        pa, pb = await a.port(), await b.port()
        headers = {"Authorization": f"Bearer {TOKEN}"}
        got: list[Any] = []
        subscribed = asyncio.Event()

        async def watch() -> None:
            timeout = aiohttp.ClientTimeout(total=60)
            async with (
                aiohttp.ClientSession(timeout=timeout) as http,
                http.get(f"http://127.0.0.1:{pb}/control/sessions/w/events", headers=headers) as stream,
            ):
                assert stream.status == 200
                subscribed.set()
                async for raw in stream.content:
                    line = raw.decode().rstrip("\n")
                    if line.startswith("data: "):
                        got.append(json.loads(line[6:])["event"])
                        if got[-1]["type"] == "run_settled":
                            return

        watcher = asyncio.create_task(watch())
        await asyncio.wait_for(subscribed.wait(), 30)
        await asyncio.sleep(0.3)
        assert answer(await invoke(pa, "w", "hello")) == "quick answer"
        await asyncio.wait_for(watcher, 30)
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{pb}/control/sessions/w/entries", headers=headers) as resp,
        ):
            entries = (await resp.json())["entries"]
    types = [e["type"] for e in got]
    assert types[0] == "run_started" and "message_delta" in types and types[-1] == "run_settled"
    assert got[-1]["data"] == {"status": "completed"}
    assert [(e["kind"], e["data"]["text"]) for e in entries if e["kind"] in ("user", "assistant")] == [
        ("user", "hello"),
        ("assistant", "quick answer"),
    ]


def test_an_unreachable_database_fails_startup_with_one_line(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent(config='state_backend = "postgres"\n')
    port = free_port()
    url = f"postgresql://fa:s3cret@127.0.0.1:{port}/agent"
    done = run_cli("start", str(agent), *LOCAL, env={"FASTAGENT_DATABASE_URL": url}, timeout=60)
    assert done.returncode == 1, done.stderr
    assert (
        f"cannot connect to the database postgresql://fa@127.0.0.1:{port}/agent (FASTAGENT_DATABASE_URL): "
        "connection refused"
    ) in done.stderr
    assert "s3cret" not in done.stderr and "Traceback" not in done.stderr
    missing = run_cli("start", str(agent), *LOCAL, timeout=60)
    assert missing.returncode == 1
    assert 'state_backend = "postgres" needs the database URL' in missing.stderr


@pytest.mark.timeout(120)
async def test_state_and_abort_on_one_instance_reach_a_run_on_another(
    shared_agent: Callable[..., Any],
) -> None:
    async with shared_agent("a") as a, shared_agent("b") as b:
        pa, pb = await a.port(), await b.port()
        headers = {"Authorization": f"Bearer {TOKEN}"}
        running = asyncio.create_task(invoke(pa, "r", "forever"))
        state = await session_state(pb, "r", "running")  # b learns of a's run from relayed events
        run_id = state["activeRunId"]
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
            base = f"http://127.0.0.1:{pb}/control/sessions/r"
            async with http.post(f"{base}/actions", json={"type": "abort"}, headers=headers) as resp:
                assert (resp.status, await resp.json()) == (200, {"ok": True, "runId": run_id})
        events = await asyncio.wait_for(running, 30)
    assert isinstance(events[-1], Failed) and events[-1].code == "aborted", events[-1]
