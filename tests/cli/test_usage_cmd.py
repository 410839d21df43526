"""Usage totals as a user reads them: ``fastagent usage``, ``sessions list/show``, as the real
process, priced from ``models.json`` ``cost`` against a fake provider speaking the real wire."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AgentFactory, RunCli
from tests.fakes.fake_providers import FakeOpenAI, openai_reply

PRICED = {"id": "small", "cost": {"input": 2, "output": 10}}  # $ per million tokens
TURN_COST = 1000 * 2 / 1e6 + 500 * 10 / 1e6  # each answer reports 1000 in, 500 out: $0.007


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        server.answer_always(openai_reply("ok", usage=(1000, 500)))
        yield server


def priced_agent(make_agent: AgentFactory, fake: FakeOpenAI, config: str = "") -> Path:
    models = {"providers": {"local": {"baseUrl": fake.base_url, "models": [PRICED]}}}
    return make_agent(
        {"models.json": json.dumps(models)}, model="local/small", config="coding_tools = false\n" + config
    )


async def cli(run_cli: RunCli, *args: str, env: dict[str, str] | None = None) -> Any:
    return await asyncio.to_thread(run_cli, *args, env=env)


@pytest.mark.timeout(180)  # eight processes in a row on a loaded machine
async def test_usage_by_session_model_and_day(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    agent = priced_agent(make_agent, fake)
    for session in ("alpha", "alpha", "beta"):
        done = await cli(run_cli, "invoke", "hi", str(agent), "--session", session)
        assert done.returncode == 0, done.stderr
    by_session = json.loads((await cli(run_cli, "usage", str(agent), "--by", "session", "-j")).stdout)
    groups = {g["key"]: g for g in by_session["groups"]}
    assert list(groups) == ["alpha", "beta"]  # the most expensive first
    assert groups["alpha"]["requests"] == 2 and groups["alpha"]["inputTokens"] == 2000
    assert groups["alpha"]["cost"] == pytest.approx(2 * TURN_COST)
    assert by_session["total"]["cost"] == pytest.approx(3 * TURN_COST)
    assert by_session["total"]["outputTokens"] == 1500 and by_session["limits"] == []
    by_model = json.loads((await cli(run_cli, "usage", str(agent), "--by", "model", "--json")).stdout)
    assert [g["key"] for g in by_model["groups"]] == ["local/small"]
    table = await cli(run_cli, "usage", str(agent), "--since", "1h")
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["DAY", "REQUESTS", "INPUT", "OUTPUT", "CACHED", "COST"]
    assert lines[1].split() == [today, "3", "3.0k", "1.5k", "0", "$0.0210"]
    assert lines[-1].split()[:2] == ["total", "3"]
    one = json.loads((await cli(run_cli, "usage", str(agent), "-s", "bet", "-j")).stdout)  # a prefix
    assert one["session"] == "beta" and one["total"]["requests"] == 1
    future = await cli(run_cli, "usage", str(agent), "--since", "2999-01-01")
    assert future.returncode == 0 and future.stdout == ""
    assert "no usage recorded for this agent since 2999-01-01T00:00:00Z" in future.stderr


async def test_sessions_list_and_show_carry_the_totals(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    agent = priced_agent(make_agent, fake)
    for _ in range(2):
        assert (await cli(run_cli, "invoke", "hi", str(agent), "--session", "s1")).returncode == 0
    doc = json.loads((await cli(run_cli, "sessions", "list", str(agent), "--json")).stdout)
    [row] = doc["sessions"]
    assert row["usage"]["requests"] == 2 and row["usage"]["totalTokens"] == 3000
    assert row["usage"]["cost"] == pytest.approx(2 * TURN_COST)
    table = (await cli(run_cli, "sessions", "list", str(agent))).stdout.splitlines()
    assert table[0].split()[:6] == ["ID", "UPDATED", "MSGS", "TOKENS", "COST", "PREVIEW"]
    assert "3.0k  $0.0140  hi" in table[1]
    shown = await cli(run_cli, "sessions", "show", "s1", str(agent))
    assert "usage     2 requests · 2.0k in · 1.0k out · $0.0140\n" in shown.stdout, shown.stdout


async def test_sessions_without_recorded_usage_show_no_columns(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent()
    (agent / ".fastagent").mkdir()
    assert (await cli(run_cli, "invoke", "hi", str(agent), "--session", "s1")).returncode == 0
    (agent / ".fastagent" / "usage.jsonl").unlink()  # an agent from before the ledger
    table = (await cli(run_cli, "sessions", "list", str(agent))).stdout.splitlines()
    assert "TOKENS" not in table[0] and "COST" not in table[0]
    assert (
        json.loads((await cli(run_cli, "sessions", "list", str(agent), "-j")).stdout)["sessions"][0]["usage"]
        is None
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--since", "yesterday"), "--since 'yesterday': use a span back from now (30m, 24h, 7d, 2w)"),
        (("--by", "week"), "Invalid value for '--by'"),
    ],
)
async def test_bad_options_are_one_line_and_exit_2(
    make_agent: AgentFactory, run_cli: RunCli, args: tuple[str, ...], message: str
) -> None:
    done = await cli(run_cli, "usage", str(make_agent()), *args)
    assert done.returncode == 2 and message in done.stderr
    assert "Traceback" not in done.stderr


async def test_an_unknown_session_is_an_error(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = await cli(run_cli, "usage", str(make_agent()), "--session", "nope")
    assert done.returncode == 1 and "no session 'nope'" in done.stderr
