"""Tool calls that wait for a person: a gated call does not run until approved, the batch's free
calls run meanwhile, deny/expiry/abort end the wait, and a restart while waiting resumes the turn
from the record once the answer comes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import ApprovalRequested, Completed, Failed, ToolEnded
from fastagent_cli.control import APPROVAL_CLOSED, NO_SUCH_APPROVAL, pending_on_branch
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.tools.approval import ApprovalPolicy
from fastagent_cli.tools.define import tool
from tests.conformance.suite import drain

RAN: list[str] = []


@tool(approval=True)
def danger(path: str) -> str:
    """Delete a path."""
    RAN.append(f"danger:{path}")
    return f"deleted {path}"


@tool(approval=lambda args: str(args.get("path", "")).startswith("/etc"))
def touch(path: str) -> str:
    """Touch a path."""
    RAN.append(f"touch:{path}")
    return f"touched {path}"


@tool
async def quick() -> str:
    """Answer at once."""
    RAN.append("quick")
    return "quick ok"


def batch_model(*calls: tuple[str, dict[str, Any]]) -> ScriptedModel:
    step = {"toolCalls": [{"name": n, "args": a} for n, a in calls]}
    return ScriptedModel.from_script({"rules": [{"steps": [step, {"text": "done"}]}]})


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


async def _requested(stream: Any) -> tuple[list[Any], ApprovalRequested]:
    seen: list[Any] = []
    async for event in stream:
        seen.append(event)
        if isinstance(event, ApprovalRequested):
            return seen, event
    raise AssertionError(f"no approval_requested in {seen}")


def _ended(events: list[Any]) -> dict[str, ToolEnded]:
    return {e.id: e for e in events if isinstance(e, ToolEnded)}


async def test_the_free_call_runs_while_the_gated_one_waits_then_approve_runs_it() -> None:
    agent = create_agent(
        model=batch_model(("danger", {"path": "/tmp/x"}), ("quick", {})), tools=[danger, quick]
    )
    hub = agent.hub.subscribe("s")
    stream = agent.invoke("s", "go")
    before, request = await asyncio.wait_for(_requested(stream), 10)
    assert request.tool == "danger" and request.args == {"path": "/tmp/x"}
    assert request.expires_at is not None
    for _ in range(50):  # the free call finishes while the gated one waits
        if "quick" in RAN:
            break
        await asyncio.sleep(0.02)
    assert RAN == ["quick"]
    result = await agent.approvals.answer("s", request.id, "approve", by="alice")
    assert result.ok
    rest = await asyncio.wait_for(drain(stream), 10)
    ended = _ended(before + rest)
    assert ended[request.tool_call_id].content == [{"type": "text", "text": "deleted /tmp/x"}]
    assert isinstance(rest[-1], Completed)
    assert RAN == ["quick", "danger:/tmp/x"]
    kinds = [e.type for e in hub.drain()]
    assert "approval_requested" in kinds and "approval_resolved" in kinds
    record = await agent.store.read("s")
    assert record is not None
    decisions = [e["data"] for e in record.entries if e.get("customType") == "fastagent:approval_decision"]
    assert decisions[0]["decision"] == "approved" and decisions[0]["by"] == "alice"
    again = await agent.approvals.answer("s", request.id, "deny", by="bob")
    assert again.code == APPROVAL_CLOSED


async def test_deny_with_a_reason_is_the_tool_result_the_model_reads() -> None:
    model = batch_model(("danger", {"path": "/"}))
    agent = create_agent(model=model, tools=[danger])
    stream = agent.invoke("s", "go")
    _, request = await asyncio.wait_for(_requested(stream), 10)
    assert (await agent.approvals.answer("s", request.id, "deny", by="ops", reason="not the root")).ok
    rest = await asyncio.wait_for(drain(stream), 10)
    ended = _ended(rest)[request.tool_call_id]
    assert ended.is_error and ended.content == [{"type": "text", "text": "Denied: not the root"}]
    assert RAN == []
    assert isinstance(rest[-1], Completed)


async def test_a_predicate_gates_only_the_calls_it_matches() -> None:
    model = batch_model(("touch", {"path": "/tmp/a"}), ("touch", {"path": "/etc/passwd"}))
    agent = create_agent(model=model, tools=[touch])
    stream = agent.invoke("s", "go")
    _, request = await asyncio.wait_for(_requested(stream), 10)
    assert request.args == {"path": "/etc/passwd"}
    await agent.approvals.answer("s", request.id, "deny", by="ops")
    rest = await asyncio.wait_for(drain(stream), 10)
    assert RAN == ["touch:/tmp/a"]
    assert _ended(rest)[request.tool_call_id].content == [{"type": "text", "text": "Denied by the user"}]


async def test_expiry_denies_the_call() -> None:
    agent = create_agent(
        model=batch_model(("danger", {"path": "/x"})), tools=[danger], approval=ApprovalPolicy(timeout=0.2)
    )
    events = await asyncio.wait_for(drain(agent.invoke("s", "go")), 10)
    ended = next(e for e in events if isinstance(e, ToolEnded))
    assert ended.content == [{"type": "text", "text": "Denied: the approval request expired"}]
    assert RAN == [] and isinstance(events[-1], Completed)


async def test_abort_while_waiting_ends_the_wait_and_the_run() -> None:
    agent = create_agent(model=batch_model(("danger", {"path": "/x"})), tools=[danger])
    stream = agent.invoke("s", "go")
    _, request = await asyncio.wait_for(_requested(stream), 10)
    assert agent.runs.abort("s").ok
    rest = await asyncio.wait_for(drain(stream), 10)
    assert isinstance(rest[-1], Failed) and rest[-1].code == "aborted"
    assert RAN == []
    assert (await agent.approvals.answer("s", request.id, "approve", by="late")).code == APPROVAL_CLOSED
    record = await agent.store.read("s")
    assert record is not None and pending_on_branch(record.ancestors()) == []


async def test_several_pending_are_answered_independently_and_policy_globs_gate_by_name() -> None:
    model = batch_model(("quick", {}), ("danger", {"path": "/a"}), ("danger", {"path": "/b"}))
    agent = create_agent(model=model, tools=[danger, quick], approval=ApprovalPolicy(tools=("qu*",)))
    stream = agent.invoke("s", "go")
    requests: list[ApprovalRequested] = []
    seen: list[Any] = []
    async for event in stream:
        seen.append(event)
        if isinstance(event, ApprovalRequested):
            requests.append(event)
            if len(requests) == 3:
                break
    by_path = {str(r.args.get("path", "quick")): r for r in requests}
    await agent.approvals.answer("s", by_path["/b"].id, "approve", by="a")
    await agent.approvals.answer("s", by_path["quick"].id, "deny", by="b", reason="no")
    await agent.approvals.answer("s", by_path["/a"].id, "deny", by="c")
    rest = await asyncio.wait_for(drain(stream), 10)
    assert RAN == ["danger:/b"]
    assert isinstance(rest[-1], Completed)


async def test_unknown_approval_and_unknown_session() -> None:
    agent = create_agent(model=batch_model(), tools=[])
    assert (await agent.approvals.answer("nope", "ap_1", "approve", by="x")).code == NO_SUCH_APPROVAL


async def test_deny_mode_refuses_without_asking_and_allow_mode_lifts_every_gate() -> None:
    denying = create_agent(
        model=batch_model(("danger", {"path": "/x"})), tools=[danger], approval=ApprovalPolicy(mode="deny")
    )
    events = await asyncio.wait_for(drain(denying.invoke("s", "go")), 10)
    assert not [e for e in events if isinstance(e, ApprovalRequested)]
    denied = next(e for e in events if isinstance(e, ToolEnded)).content[0]["text"]
    assert denied.startswith("Denied: refused by the agent's policy")
    allowing = create_agent(
        model=batch_model(("danger", {"path": "/y"})), tools=[danger], approval=ApprovalPolicy(mode="allow")
    )
    await asyncio.wait_for(drain(allowing.invoke("s", "go")), 10)
    assert RAN == ["danger:/y"]


def _file_agent(directory: Path, model: ScriptedModel) -> EngineAgent:
    return create_agent(
        model=model, tools=[danger, quick], sessions=FileSessionStore(directory, str(directory))
    )


async def test_a_restart_while_waiting_keeps_the_request_and_an_answer_resumes_the_turn(
    tmp_path: Path,
) -> None:
    model = batch_model(("danger", {"path": "/r"}), ("quick", {}))
    first = _file_agent(tmp_path, model)
    stream = first.invoke("s", "go")
    _, request = await asyncio.wait_for(_requested(stream), 10)
    for _ in range(50):
        if "quick" in RAN:
            break
        await asyncio.sleep(0.02)
    await stream.aclose()  # the process goes away: nothing waits in memory any more
    await first.aclose()

    second = _file_agent(tmp_path, model)
    record = await second.store.read("s")
    assert record is not None
    assert [p.id for p in pending_on_branch(record.ancestors())] == [request.id]
    watch = second.hub.subscribe("s")
    result = await second.approvals.answer("s", request.id, "approve", by="alice")
    assert result.ok and result.run_id
    kinds: list[str] = []
    async for event in watch:
        kinds.append(event.type)
        if event.type == "run_settled":
            assert event.data["status"] == "completed"
            break
    assert "tool_finished" in kinds and "message_finished" in kinds
    # asked before the restart and answered: the resumed run resolves it without asking again
    assert "approval_requested" not in kinds and "approval_resolved" in kinds
    assert RAN == ["quick", "danger:/r"]
    record = await second.store.read("s")
    assert record is not None
    texts = [m for m in record.context().messages if m.get("role") == "assistant"]
    assert texts[-1]["content"] == [{"type": "text", "text": "done"}]
    await second.aclose()


async def test_a_new_prompt_after_a_restart_withdraws_the_open_request(tmp_path: Path) -> None:
    model = batch_model(("danger", {"path": "/w"}))
    first = _file_agent(tmp_path, model)
    stream = first.invoke("s", "go")
    _, request = await asyncio.wait_for(_requested(stream), 10)
    await stream.aclose()
    await first.aclose()
    second = _file_agent(tmp_path, ScriptedModel.from_script({"rules": [{"steps": [{"text": "hi"}]}]}))
    events = await asyncio.wait_for(drain(second.invoke("s", "hello")), 10)
    assert isinstance(events[-1], Completed)
    assert (await second.approvals.answer("s", request.id, "approve", by="x")).code == APPROVAL_CLOSED
    assert RAN == []
