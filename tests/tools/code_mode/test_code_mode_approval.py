"""A tool that asks for approval asks from code mode's run_code too (nested calls are not a way
around the policy); the answer releases or refuses the nested call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from fastagent_cli.assembly import OpenedAgent, open_agent_dir
from fastagent_cli.contract import ApprovalRequested, Completed, Scope, ToolEnded
from fastagent_cli.engine.agent import EngineAgent
from tests.conformance.suite import drain
from tests.conftest import AgentFactory
from tests.tools.code_mode.test_code_mode import MODEL, SHOUT, text


@pytest.fixture
async def agent(make_agent: AgentFactory) -> AsyncIterator[tuple[Path, OpenedAgent]]:
    guarded = SHOUT.replace("@tool\n", "@tool(approval=True)\n")
    root = make_agent(
        {"code_model.py": MODEL, "tools/shout.py": guarded, "snippets.json": "{}"},
        model="scripted/code_model:reply",
        config="coding_tools = false\n[code_mode]\ntime_limit = 30\n",
    )
    opened = open_agent_dir(root)
    try:
        yield root, opened
    finally:
        await opened.aclose()


async def _turn(agent: tuple[Path, OpenedAgent], decision: str) -> tuple[ApprovalRequested, list[Any]]:
    root, opened = agent
    (root / "snippets.json").write_text(json.dumps({"go": [{"code": 'shout(text="hi")'}]}))
    engine = cast(EngineAgent, opened.agent)
    stream = opened.agent.invoke(Scope("s"), "go")
    seen: list[Any] = []
    async for event in stream:
        seen.append(event)
        if isinstance(event, ApprovalRequested):
            break
    request = seen[-1]
    assert isinstance(request, ApprovalRequested) and request.tool == "shout"
    assert request.args == {"text": "hi"}
    assert (await engine.approvals.answer("s", request.id, decision, by="t", reason="not now")).ok  # type: ignore[arg-type]
    seen += await asyncio.wait_for(drain(stream), 30)
    assert isinstance(seen[-1], Completed)
    return request, seen


async def test_a_nested_call_waits_for_its_approval(agent: tuple[Path, OpenedAgent]) -> None:
    _, events = await _turn(agent, "approve")
    ended = [e for e in events if isinstance(e, ToolEnded)]
    assert "HI" in text(ended[0])


async def test_a_denied_nested_call_fails_inside_the_code(agent: tuple[Path, OpenedAgent]) -> None:
    _, events = await _turn(agent, "deny")
    ended = [e for e in events if isinstance(e, ToolEnded)]
    assert "shout was not run: Denied: not now" in text(ended[0])
