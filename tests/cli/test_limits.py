"""Spend limits as an operator meets them: ``[limits]`` in ``fastagent.toml``, priced from
``models.json`` ``cost`` against a fake provider on the real wire, every turn its own process
(so every check reads what earlier processes recorded: a restart keeps the totals), on files and
on the shared PostgreSQL database; ``fastagent usage`` shows what is left."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AgentFactory, RunCli
from tests.fakes.fake_providers import FakeCall, FakeOpenAI, openai_reply

PRICED = {"id": "small", "cost": {"input": 2, "output": 10}}  # $ per million tokens
ANSWER = 1000 * 2 / 1e6 + 500 * 10 / 1e6  # each answer reports 1000 in, 500 out: $0.007


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def agent_with(make_agent: AgentFactory, fake: FakeOpenAI, limits: str, extra: str = "") -> Path:
    models = {"providers": {"local": {"baseUrl": fake.base_url, "models": [PRICED]}}}
    config = 'coding_tools = ["read"]\n' + extra + "[limits]\n" + limits
    return make_agent(
        {"models.json": json.dumps(models), "notes.txt": "n"}, model="local/small", config=config
    )


async def invoke(run_cli: RunCli, agent: Path, session: str, env: dict[str, str] | None = None) -> Any:
    return await asyncio.to_thread(
        run_cli, "invoke", "hi", str(agent), "--session", session, "--json", env=env
    )


def outcome(done: Any) -> dict[str, Any]:
    return json.loads(done.stdout.splitlines()[-1])


async def test_the_turn_limit_stops_a_tool_turn_before_its_next_request(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    agent = agent_with(make_agent, fake, "max_cost_per_turn = 0.007\n")
    fake.enqueue_stream(
        openai_reply(tool_calls=[FakeCall("read", {"path": "notes.txt"}, "c1")], usage=(1000, 500))
    )
    done = await invoke(run_cli, agent, "s")
    assert done.returncode == 1
    failed = outcome(done)
    assert (failed["type"], failed["code"], failed["retryable"]) == ("failed", "budget_exceeded", False)
    assert failed["details"].startswith(
        "spend limit reached: max_cost_per_turn = $0.007 per turn; this turn has used $0.007"
    )
    assert fake.pending == 0 and len(fake.requests) == 1  # the second request was never sent


@pytest.mark.timeout(180)  # eight processes in a row on a loaded machine
async def test_session_and_day_limits_hold_across_processes_and_usage_shows_what_is_left(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    agent = agent_with(make_agent, fake, "max_cost_per_session = 0.012\nmax_cost_per_day = 0.02\n")
    fake.answer_always(openai_reply("ok", usage=(1000, 500)))
    assert (await invoke(run_cli, agent, "a")).returncode == 0
    assert (await invoke(run_cli, agent, "a")).returncode == 0  # $0.007 + the estimate fits $0.012
    refused = outcome(await invoke(run_cli, agent, "a"))
    assert refused["code"] == "budget_exceeded"
    assert "max_cost_per_session = $0.012 per session; this session has used $0.014" in refused["details"]
    assert (await invoke(run_cli, agent, "b")).returncode == 0  # another session: its own budget
    day = outcome(await invoke(run_cli, agent, "c"))  # $0.021 spent today
    assert "max_cost_per_day = $0.02 per day; today (UTC) has used $0.021" in day["details"]
    doc = json.loads((await asyncio.to_thread(run_cli, "usage", str(agent), "-s", "b", "-j")).stdout)
    limits = {entry["limit"]: entry for entry in doc["limits"]}
    assert limits["max_cost_per_day"]["used"] == pytest.approx(3 * ANSWER)
    assert limits["max_cost_per_day"]["left"] == 0
    assert limits["max_cost_per_session"]["left"] == pytest.approx(0.012 - ANSWER)
    text = (await asyncio.to_thread(run_cli, "usage", str(agent))).stdout
    assert "max_cost_per_day = $0.0200: $0.0210 used today (UTC), $0 left" in text
    assert "max_cost_per_session = $0.0120: applies to each session (--session ID shows one's)" in text


async def test_token_limits_bound_models_without_prices(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent()  # scripted/echo: no prices, only tokens
    first = await invoke(run_cli, agent, "s")
    assert first.returncode == 0, first.stderr
    used = outcome(first)["data"]["usage"]["totalTokens"]
    limit = used + used // 2  # the next request's input alone (the whole context again) passes it
    (agent / "fastagent.toml").write_text(
        f'model = "scripted/echo"\n[limits]\nmax_tokens_per_session = {limit}\n'
    )
    refused = outcome(await invoke(run_cli, agent, "s"))
    assert refused["code"] == "budget_exceeded"
    assert (
        f"max_tokens_per_session = {limit:,} tokens per session; this session has used {used:,} tokens"
        in (refused["details"])
    )


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ("max_cost_per_day = -1\n", "limits.max_cost_per_day"),
        ("max_tokens_per_turn = 0\n", "limits.max_tokens_per_turn"),
        ("max_dollars = 3\n", "max_dollars"),
    ],
)
async def test_bad_limits_are_one_clear_line(
    make_agent: AgentFactory, run_cli: RunCli, limits: str, message: str
) -> None:
    agent = make_agent(config="[limits]\n" + limits)
    done = await invoke(run_cli, agent, "s")
    assert done.returncode == 2 or done.returncode == 1
    assert message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.timeout(120)
async def test_the_day_limit_is_shared_by_instances_on_postgres(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI, database_url: str, tmp_path: Path
) -> None:
    agent = agent_with(make_agent, fake, "max_cost_per_day = 0.01\n", extra='state_backend = "postgres"\n')
    fake.answer_always(openai_reply("ok", usage=(1000, 500)))
    one = {"FASTAGENT_DATABASE_URL": database_url, "FASTAGENT_STATE_DIR": str(tmp_path / "one")}
    two = {**one, "FASTAGENT_STATE_DIR": str(tmp_path / "two")}  # another machine: no shared files
    assert (await invoke(run_cli, agent, "a", one)).returncode == 0
    assert (await invoke(run_cli, agent, "b", two)).returncode == 0
    refused = outcome(await invoke(run_cli, agent, "c", one))
    assert refused["code"] == "budget_exceeded" and "max_cost_per_day = $0.01 per day" in refused["details"]
    assert not (tmp_path / "one" / "usage.jsonl").exists()
    doc = json.loads(
        (await asyncio.to_thread(run_cli, "usage", str(agent), "--by", "session", "-j", env=two)).stdout
    )
    assert [g["key"] for g in doc["groups"]] == ["a", "b"] and doc["total"]["requests"] == 2
