"""Re-entering a turn at its open tool calls: an approval answered after a restart.

After a restart nothing waits in memory, but the record still holds the approval request and its
open call (see :mod:`.approvals`). An answer then starts a run of the server's own
(:class:`Resumer`) that binds with ``resume``: it takes the leaf's open calls (:func:`open_calls`),
finishes them and goes on with the model. A run for new input withdraws them first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

from fastagent_cli.contract import AgentEvent, Failed
from fastagent_cli.control import SESSION_BUSY, ActionResult, accepted, rejected
from fastagent_cli.engine.approvals import ApprovalDesk
from fastagent_cli.engine.runs import Run, RunRegistry
from fastagent_cli.errors import FastagentError
from fastagent_cli.messages import ToolCall
from fastagent_cli.sessions.record import SessionRecord

__all__ = ["Resumer", "open_calls"]

log = logging.getLogger("fastagent.agent")

StartRun = Callable[[str], AsyncIterator[AgentEvent]]
"""Starts a resumed run of a session (the engine's ``run_inputs(session, [], resume=True)``)."""


def open_calls(record: SessionRecord, run: Run, resume: bool, approvals: ApprovalDesk) -> list[ToolCall]:
    """The leaf's tool calls still waiting for an approval (a restarted server's): what a
    resumed run finishes; a run for new input withdraws them first."""
    if not resume:
        approvals.withdraw(record, run, run.publish)
        return []
    open_ids = {call_id for call_id, _ in record.dangling_tool_calls()}
    messages = record.context().messages
    last = messages[-1] if messages else None
    while messages and last is not None and last.get("role") == "toolResult":
        messages = messages[:-1]
        last = messages[-1] if messages else None
    calls: list[ToolCall] = []
    if last is not None and last.get("role") == "assistant":
        for block in cast(list[dict[str, Any]], last.get("content", [])):
            if block.get("type") == "toolCall" and str(block.get("id")) in open_ids:
                calls.append(cast(ToolCall, block))
    if not calls:
        raise FastagentError("this session has no tool call waiting for an approval")
    return calls


class Resumer:
    """The resumed runs of one engine: each belongs to the server (follow it on the session's
    events); :meth:`stop` cancels the ones still going."""

    def __init__(self, runs: RunRegistry, start: StartRun) -> None:
        self._runs = runs
        self._start = start
        self._tasks: set[asyncio.Task[None]] = set()

    async def __call__(self, session: str) -> ActionResult:
        """Start a run that re-enters ``session``'s turn at its open tool calls."""
        if self._runs.status(session) != "idle":
            return rejected(SESSION_BUSY, "another run holds this session; answer again once it settles")

        async def drive() -> None:
            async for event in self._start(session):
                if isinstance(event, Failed):
                    log.warning(
                        "[approval] the resumed turn of session %s failed: %s", session, event.details
                    )

        task = asyncio.create_task(drive())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await asyncio.sleep(0)  # the drive takes the lease and registers the run
        run = self._runs.active(session)
        return accepted(run.run_id if run is not None else None)

    def stop(self) -> list[asyncio.Task[None]]:
        """Cancel the resumed runs still going; returns their tasks (to wait for)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        return tasks
