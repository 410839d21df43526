"""An agent opened on the PostgreSQL backend (a real server): the database connection lost in the
middle of a turn fails that turn with a retryable ``failed`` and leaves only whole entries; the
instance reconnects by itself and the next turn on the session runs."""

from __future__ import annotations

import asyncio
import json

import asyncpg
import pytest

from fastagent_cli.assembly import open_agent_dir
from fastagent_cli.contract import Completed, Failed
from tests.conftest import AgentFactory

SCRIPT = {"rules": [{"match": "slow", "steps": [{"text": "late", "delayMs": 1500}]}, {"steps": ["quick"]}]}


@pytest.mark.timeout(90)
async def test_a_connection_lost_mid_turn_fails_it_retryably_then_the_instance_recovers(
    make_agent: AgentFactory, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FASTAGENT_DATABASE_URL", database_url)
    agent = make_agent(
        {"scripts/s.json": json.dumps(SCRIPT)}, model="scripted/s", config='state_backend = "postgres"\n'
    )
    opened = open_agent_dir(agent)
    try:
        assert opened.backend.kind == "postgres"
        await opened.connect()
        db = opened.backend.database
        assert db is not None
        events = []

        async def run() -> None:
            async for event in opened.agent.invoke("s", "slow please"):
                events.append(event)

        turn = asyncio.create_task(run())
        await asyncio.sleep(0.5)  # inside the model call
        admin = await asyncpg.connect(database_url)
        try:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                f"fastagent/{db.instance}/link",
            )
        finally:
            await admin.close()
        await asyncio.wait_for(turn, 30)
        last = events[-1]
        assert isinstance(last, Failed) and last.retryable, last
        for _ in range(200):  # reconnects in the background (capped exponential backoff)
            if db.link.up:
                break
            await asyncio.sleep(0.05)
        again = [e async for e in opened.agent.invoke("s", "hi")]
        assert isinstance(again[-1], Completed), again[-1]
        record = await opened.sessions.read("s")
        assert record is not None
        roles = [m["role"] for m in record.messages]
        assert "assistant" in roles and roles[-2:] == ["user", "assistant"]
        assert not any(
            m["role"] == "assistant" and m["content"] and m["content"][0].get("text") == "late"
            for m in record.messages
        )  # the interrupted answer was never committed
    finally:
        await opened.aclose()
