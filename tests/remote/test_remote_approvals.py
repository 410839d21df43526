"""The remote session client answers approvals as the local hub does: the state lists them, an
answer releases the call, unknown and closed approvals answer the same codes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from fastagent_cli.contract import ApprovalRequested, Completed, Scope, ToolEnded
from fastagent_cli.control import APPROVAL_CLOSED, NO_SUCH_APPROVAL
from fastagent_cli.remote import RemoteAgent, RemoteSessionControl, connect_agent, connect_session_control
from fastagent_cli.serving.host import serve
from fastagent_cli.serving.service import create_agent_service
from tests.conftest import AgentFactory

TOKEN = "remote-approvals-token"
SCRIPT = {"rules": [{"steps": [{"toolCalls": [{"name": "wipe", "args": {"path": "/srv"}}]}, {"text": "ok"}]}]}
WIPE = (
    "from fastagent_cli import tool\n\n@tool(approval=True)\ndef wipe(path: str) -> str:\n"
    "    'Wipe.'\n    return f'wiped {path}'\n"
)


@pytest.fixture
async def remote(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[RemoteSessionControl, RemoteAgent]]:
    monkeypatch.setenv("FASTAGENT_CONTROL_TOKEN", TOKEN)
    agent_dir = make_agent(
        {"scripts/r.json": json.dumps(SCRIPT), "tools/wipe.py": WIPE},
        model="scripted/r",
        config="session_control = true\ncoding_tools = false\n",
    )
    service = await create_agent_service(agent_dir)
    server = serve(service.handler, port=0, host="127.0.0.1")
    url = f"http://127.0.0.1:{await server.listening}"
    control = await connect_session_control(url, TOKEN)
    agent = connect_agent(url, TOKEN)
    try:
        yield control, agent
    finally:
        await control.aclose()
        await agent.aclose()
        await server.close()
        await service.close()


async def test_state_lists_the_request_and_answer_approval_releases_it(
    remote: tuple[RemoteSessionControl, RemoteAgent],
) -> None:
    control, agent = remote
    session = control.sessions.get("r1")
    stream = agent.invoke(Scope("r1"), "go")
    request = None
    async for event in stream:
        if isinstance(event, ApprovalRequested):
            request = event
            break
    assert request is not None and request.tool == "wipe" and request.args == {"path": "/srv"}
    state = await session.state()
    assert [(a.id, a.tool, a.args) for a in state.approvals] == [(request.id, "wipe", {"path": "/srv"})]
    missing = await session.answer_approval("ap_missing", "approve", by="me")
    assert missing.code == NO_SUCH_APPROVAL
    answered = await session.answer_approval(request.id, "deny", by="me", reason="keep /srv")
    assert answered.ok
    again = await session.answer_approval(request.id, "approve", by="me")
    assert again.code == APPROVAL_CLOSED
    rest = [e async for e in stream]
    ended = next(e for e in rest if isinstance(e, ToolEnded))
    assert ended.content == [{"type": "text", "text": "Denied: keep /srv"}]
    assert isinstance(rest[-1], Completed)
    assert (await asyncio.wait_for(session.state(), 10)).approvals == ()
