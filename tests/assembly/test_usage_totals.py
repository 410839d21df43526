"""The session hub's state carries the session's usage totals from the ledger (and its wire form
round-trips); a hub without a ledger reports none."""

from __future__ import annotations

from pathlib import Path

from fastagent_cli.assembly import create_agent
from fastagent_cli.assembly.control import session_control
from fastagent_cli.control import SessionState
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.state.usage import FileUsageLedger
from tests.conformance.suite import drain


async def test_state_totals_sum_every_answer_of_the_session(tmp_path: Path) -> None:
    agent = create_agent(
        model=ScriptedModel.from_script({"steps": [{"text": "ok", "usage": {"input": 40, "output": 2}}]}),
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        cwd=tmp_path,
    )
    hub = session_control(agent)
    assert (await hub.sessions.get("s").state()).totals is None  # no ledger: nothing to sum
    agent.config.usage = FileUsageLedger(tmp_path / "state")
    for _ in range(3):
        await drain(agent.invoke("s", "hi"))
    await drain(agent.invoke("other", "hi"))
    state = await hub.sessions.get("s").state()
    assert state.totals is not None
    assert (state.totals.requests, state.totals.input_tokens, state.totals.output_tokens) == (3, 120, 6)
    wire = state.to_json()
    assert wire["totals"] == {
        "requests": 3,
        "inputTokens": 120,
        "outputTokens": 6,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 0,
        "totalTokens": 126,
        "cost": 0.0,
    }
    assert SessionState.from_json(wire) == state
    assert "totals" not in (await hub.sessions.get("fresh").state()).to_json()
