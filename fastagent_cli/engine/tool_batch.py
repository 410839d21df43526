"""Running one assistant message's tool calls.

Calls start in source order (``tool_started`` for each), run concurrently unless a tool in the
batch is ``sequential``, and end as they finish (``tool_ended``), each result persisted as soon as
it exists. A tool that raises becomes an error result for the model; the turn goes on. Unknown or
inactive tools answer ``Tool <name> not found``. A call that runs past its limit (the tool's own
``timeout``, else the engine's ``tool_timeout``) is cancelled and answers ``Tool <name> timed out
after N seconds``. Every result is held to the size limit of
:mod:`fastagent_cli.tools.result_limit` before it is stored or sent. A tool may report progress
(``ctx.report(partial)``), published as ``tool_progress`` (a snapshot, replacing the last one).
When the batch is cancelled (an abort, a caller that left), every unfinished call is recorded and
reported as ``Operation aborted``, except a call waiting for approval when the run was not
aborted: it stays open in the record, its request pending. A call that needs approval waits for
its answer first (:mod:`.approvals`) while the batch's other calls run; denied, its result is the
denial.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fastagent_cli.control import SessionEvent, pending_on_branch
from fastagent_cli.engine.activation import ActivationState
from fastagent_cli.engine.approvals import ApprovalDesk
from fastagent_cli.engine.failures import first_failure
from fastagent_cli.engine.runs import Run
from fastagent_cli.engine.traces import tool_span
from fastagent_cli.messages import ToolCall, ToolResultMessage, now_ms
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.tools.base import (
    NestedApproval,
    ReadonlySession,
    RunScope,
    Tool,
    ToolContext,
    ToolResult,
    text_result,
)
from fastagent_cli.tools.prints import tool_prints
from fastagent_cli.tools.result_limit import limit_result

__all__ = ["ABORTED_TOOL_TEXT", "call_limit", "run_tool_batch"]

log = logging.getLogger("fastagent.agent")
ABORTED_TOOL_TEXT = "Operation aborted"
_ABORTED_CONTENT = [{"type": "text", "text": ABORTED_TOOL_TEXT}]


def _finished(result: ToolResult) -> dict[str, Any]:
    """A ``tool_finished`` event's ``content``: the tool's result as the original publishes it,
    ``{content: [blocks], details?}`` (the invoke stream's ``tool_ended`` carries the blocks)."""
    out: dict[str, Any] = {"content": result.content}
    if result.details is not None:
        out["details"] = result.details
    return out


def _result_message(call: ToolCall, result: ToolResult) -> ToolResultMessage:
    message: ToolResultMessage = {
        "role": "toolResult",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "content": result.content,
        "isError": result.is_error,
        "timestamp": now_ms(),
    }
    if result.details is not None:
        message["details"] = result.details
    if result.added_tool_names:
        message["addedToolNames"] = list(result.added_tool_names)
    return message


def call_limit(tool: Tool, default: float | None) -> float | None:
    """Seconds one call of ``tool`` may run: its own ``timeout``, else ``default`` (``None`` or 0:
    no limit)."""
    limit = tool.timeout if tool.timeout is not None else default
    return limit if limit else None


async def _execute(
    tool: Tool | None, call: ToolCall, ctx: ToolContext, default_limit: float | None
) -> ToolResult:
    if tool is None:
        return text_result(f"Tool {call['name']} not found", is_error=True)
    limit = call_limit(tool, default_limit)
    deadline = asyncio.timeout(limit)
    try:
        with tool_prints(call["name"]):  # its prints: to the log, capped per call
            async with deadline:
                return await tool.execute(call["arguments"], ctx)
    except asyncio.CancelledError:
        raise
    except TimeoutError as exc:
        if not deadline.expired():
            return text_result(
                str(exc) or "TimeoutError", is_error=True, details={"exception": "TimeoutError"}
            )
        log.warning("[agent] tool %s timed out after %g s", call["name"], limit)
        return text_result(f"Tool {call['name']} timed out after {limit:g} seconds", is_error=True)
    except Exception as exc:  # a tool's failure is the model's information, not the turn's end
        text = str(exc) or type(exc).__name__
        return text_result(text, is_error=True, details={"exception": type(exc).__name__})


def _preview(value: Any, limit: int = 200) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def run_tool_batch(
    calls: Sequence[ToolCall],
    *,
    tools: Mapping[str, Tool],
    activation: ActivationState,
    record: SessionRecord,
    cwd: str,
    run: Run,
    emit: Callable[[SessionEvent], None],
    tool_timeout: float | None = None,
    scope: RunScope | None = None,
    approvals: ApprovalDesk | None = None,
) -> list[ToolResultMessage]:
    """Execute ``calls``; return their result messages in source order."""
    results: dict[str, ToolResultMessage] = {}
    session_view = ReadonlySession(record)
    active = set(activation.active())
    chosen = [tools.get(c["name"]) if c["name"] in active else None for c in calls]
    sequential = any(t is not None and t.sequential for t in chosen)

    async def one(call: ToolCall, tool: Tool | None) -> None:
        bridge = activation.for_call()

        def progress(partial: Any) -> None:
            if call["id"] not in results:  # a late report after the result is ignored
                emit(run.event("tool_progress", id=call["id"], name=call["name"], partialResult=partial))

        ctx = ToolContext(
            cwd=cwd,
            session=session_view,
            tools=bridge,
            tool_call_id=call["id"],
            progress=progress,
            run=scope,
            approve=_nested(approvals, call, record, run, emit) if approvals is not None else None,
        )
        denied = None
        if tool is not None and approvals is not None and approvals.gated(tool):
            denied = await approvals.gate(call, tool, record, run, emit)
        started = time.monotonic()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("[agent]   tool → %s(%s)", call["name"], _preview(call["arguments"], 120))
        with tool_span(call["name"], call["id"], call["arguments"]) as traced:
            result = denied or limit_result(await _execute(tool, call, ctx, tool_timeout))
            traced(result.is_error, result.content)
        for name in bridge.added:
            if name not in result.added_tool_names:
                result.added_tool_names.append(name)
        message = _result_message(call, result)
        record.append_message(message)
        results[call["id"]] = message
        emit(run.event("tool_finished", id=call["id"], isError=result.is_error, content=_finished(result)))
        if log.isEnabledFor(logging.DEBUG):
            mark = "✗" if result.is_error else "✓"
            took = (time.monotonic() - started) * 1000
            log.debug(
                "[agent]   tool %s %s → %s (%.0f ms)", mark, call["name"], _preview(result.content), took
            )

    for call in calls:
        emit(run.event("tool_started", id=call["id"], name=call["name"], args=call["arguments"]))
    try:
        if sequential:
            for call, tool in zip(calls, chosen, strict=True):
                await one(call, tool)
        else:
            async with asyncio.TaskGroup() as group:
                for call, tool in zip(calls, chosen, strict=True):
                    group.create_task(one(call, tool))
    except asyncio.CancelledError:
        kept: set[str] = set()
        if approvals is not None and not run.abort_requested:  # answered later, resumed then
            kept = {p.tool_call_id for p in pending_on_branch(record.ancestors())}
        for call in _record_aborted([c for c in calls if c["id"] not in kept], results, record):
            emit(
                run.event("tool_finished", id=call["id"], isError=True, content={"content": _ABORTED_CONTENT})
            )
        raise
    except BaseExceptionGroup as group:
        # a call's result could not be recorded (the store failed): the turn fails with that
        # error as it would on any other write, not with the task group that carried it
        raise first_failure(group) from None
    return [results[c["id"]] for c in calls]


def _nested(
    approvals: ApprovalDesk,
    call: ToolCall,
    record: SessionRecord,
    run: Run,
    emit: Callable[[SessionEvent], None],
) -> NestedApproval:
    """The gate of the calls a tool makes itself (code mode's): asked within ``call``."""

    async def approve(call_id: str, tool: Tool, args: Mapping[str, Any]) -> ToolResult | None:
        if not approvals.gated(tool):
            return None
        nested: ToolCall = {"type": "toolCall", "id": call_id, "name": tool.name, "arguments": dict(args)}
        return await approvals.gate(nested, tool, record, run, emit, within=call["id"])

    return approve


def _record_aborted(
    calls: Sequence[ToolCall], results: Mapping[str, ToolResultMessage], record: SessionRecord
) -> list[ToolCall]:
    """Close every unfinished call with an aborted result so the record stays valid at once."""
    pending = [c for c in calls if c["id"] not in results]
    if not pending:
        return pending
    try:
        record.append_many(
            [
                ("message", {"message": _result_message(c, text_result(ABORTED_TOOL_TEXT, is_error=True))})
                for c in pending
            ]
        )
    except Exception:  # the record is repaired on the next open anyway
        log.warning("[agent] could not record aborted tool calls for session %s", record.session)
    return pending
