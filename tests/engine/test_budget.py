"""Spend limits in the engine: checked before each model request against the turn, the session
and the UTC day (the usage ledger's sums), refused with ``failed{code: budget_exceeded}`` (not
retryable) naming the limit and its window; every answer recorded in the ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, Failed
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.budget import SpendLimits
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.state.usage import FileUsageLedger, UsageEntry
from fastagent_cli.tools.define import tool
from tests.conformance.suite import drain

DAY = 86_400_000
USAGE = {"input": 100, "output": 50}


@tool
def lookup() -> str:
    """Look something up."""
    return "found"


def agent_with(tmp_path: Path, limits: SpendLimits, steps: list[Any] | None = None) -> EngineAgent:
    script = {
        "rules": [
            {
                "match": "tool",
                "steps": [
                    {"toolCalls": [{"name": "lookup", "args": {}}], "usage": USAGE},
                    {"text": "done", "usage": USAGE},
                ],
            },
            {"steps": steps or [{"text": "ok", "usage": USAGE}]},
        ]
    }
    agent = create_agent(
        model=ScriptedModel.from_script(script),
        tools=[lookup],
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        cwd=tmp_path,
    )
    agent.config.usage = FileUsageLedger(tmp_path / "state")
    agent.config.limits = limits
    return agent


def failed(events: list[Any]) -> Failed:
    assert isinstance(events[-1], Failed), events
    return events[-1]


async def test_the_turn_limit_refuses_the_next_request_of_a_tool_turn(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, SpendLimits(max_tokens_per_turn=200))
    events = await drain(agent.invoke("s", "use the tool"))
    refused = failed(events)
    assert (refused.code, refused.retryable) == ("budget_exceeded", False)
    assert refused.details.startswith(
        "spend limit reached: max_tokens_per_turn = 200 tokens per turn; this turn has used 150 tokens"
    )
    ledger = agent.config.usage
    assert ledger is not None
    assert [e.tokens for e in await ledger.entries()] == [150]  # the tool round's answer only
    # a fresh turn has a fresh budget: a plain answer fits
    assert isinstance((await drain(agent.invoke("s", "hello")))[-1], Completed)


async def test_the_session_limit_counts_earlier_turns_and_other_sessions_do_not(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, SpendLimits(max_tokens_per_session=400))
    for _ in range(2):
        assert isinstance((await drain(agent.invoke("s", "hi")))[-1], Completed)
    refused = failed(await drain(agent.invoke("s", "hi")))
    assert refused.code == "budget_exceeded"
    assert (
        "max_tokens_per_session = 400 tokens per session; this session has used 300 tokens" in refused.details
    )
    assert isinstance((await drain(agent.invoke("other", "hi")))[-1], Completed)
    # a restart: a new process's agent reads the same ledger
    again = agent_with(tmp_path, SpendLimits(max_tokens_per_session=400))
    assert failed(await drain(again.invoke("s", "hi"))).code == "budget_exceeded"


async def test_the_day_limit_is_the_utc_day_across_sessions(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, SpendLimits(max_tokens_per_day=300))
    ledger = agent.config.usage
    assert ledger is not None
    from fastagent_cli.messages import now_ms

    await ledger.add(UsageEntry(now_ms() - now_ms() % DAY - 1, "old", "scripted/custom", 10_000))  # yesterday
    assert isinstance((await drain(agent.invoke("a", "hi")))[-1], Completed)
    assert isinstance((await drain(agent.invoke("b", "hi")))[-1], Completed)
    refused = failed(await drain(agent.invoke("c", "hi")))
    assert "max_tokens_per_day = 300 tokens per day; today (UTC) has used 300 tokens" in refused.details
    assert refused.details.endswith("(the day resets at 00:00 UTC)")


async def test_no_limits_still_records_every_answer(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, SpendLimits())
    assert isinstance((await drain(agent.invoke("s", "use the tool")))[-1], Completed)
    ledger = agent.config.usage
    assert ledger is not None
    entries = await ledger.entries()
    assert [(e.session, e.model, e.input, e.output) for e in entries] == [
        ("s", "scripted/custom", 100, 50)
    ] * 2


async def test_an_unwritable_ledger_is_warned_about_never_a_failed_turn(tmp_path: Path, caplog: Any) -> None:
    agent = agent_with(tmp_path, SpendLimits())
    (tmp_path / "state").write_text("not a directory")
    assert isinstance((await drain(agent.invoke("s", "use the tool")))[-1], Completed)
    warned = [r for r in caplog.records if "could not record usage" in r.getMessage()]
    assert len(warned) == 1  # once per run
