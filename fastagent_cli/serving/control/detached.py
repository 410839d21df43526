"""Runs started by ``POST /control/invoke`` with ``"detach": true``: the run belongs to the server.

A plain ``/control/invoke`` is the data plane: the run lives as long as the request, and a client
that leaves cancels it. A browser page cannot hold a request open across a reload, so a detached
invoke answers an :class:`~fastagent_cli.control.ActionResult` as soon as the run has begun
(``{"ok": true, "runId"}``), or has failed to (``session_busy`` while another run holds the
session, ``boundary_command_failed`` when the turn failed before it began), and the run goes on
without the request. Follow it through ``GET /control/sessions/{id}/events``, stop it with an
``abort`` action; server shutdown (:meth:`DetachedRuns.aclose`) cancels what is still running.

How "begun" is told apart from "refused": the caller is subscribed to the session before the run
is driven; the engine takes the session's lease and publishes ``run_started`` in the first step of
the drive, or yields ``failed{session_busy}`` there. The drive's first step runs before the
subscription's first read (tasks run in the order they were scheduled), so whichever of
``run_started`` / the refusal the caller sees first, the drive's outcome is already known when it
looks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from fastagent_cli.contract import (
    SESSION_BUSY_CODE,
    Agent,
    AgentEvent,
    Failed,
    Prompt,
    Scope,
    closing,
    is_terminal,
)
from fastagent_cli.control import (
    BOUNDARY_COMMAND_FAILED,
    SESSION_BUSY,
    ActionResult,
    Session,
    SessionEventsClosed,
    SessionEventStream,
    accepted,
    rejected,
)

__all__ = ["CLOSE_GRACE_S", "DetachedRuns"]

log = logging.getLogger("fastagent.control")

CLOSE_GRACE_S = 0.5
"""How long :meth:`DetachedRuns.aclose` waits for cancelled runs to settle."""


class DetachedRuns:
    """The runs detached invokes started; :meth:`aclose` cancels those still running."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def __len__(self) -> int:
        return len(self._tasks)

    async def start(self, agent: Agent, session: Session, scope: Scope, prompt: Prompt) -> ActionResult:
        """Begin ``agent.invoke(scope, prompt)`` without a caller holding the stream."""
        if self._closed:
            return rejected(BOUNDARY_COMMAND_FAILED, "the server is shutting down")
        outcome: asyncio.Future[AgentEvent | None] = asyncio.get_running_loop().create_future()
        async with session.events() as events:
            await events.ready()
            task = asyncio.create_task(self._drive(agent, scope, prompt, outcome), name="detached run")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            started = asyncio.ensure_future(_run_started(events))
            try:
                waiting: set[asyncio.Future[Any]] = {started, outcome}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                run_id = started.result() if started.done() else None
            finally:
                started.cancel()
                with contextlib.suppress(BaseException):
                    await started
        terminal = outcome.result() if outcome.done() else None
        if isinstance(terminal, Failed) and (terminal.code == SESSION_BUSY_CODE or run_id is None):
            code = SESSION_BUSY if terminal.code == SESSION_BUSY_CODE else BOUNDARY_COMMAND_FAILED
            return rejected(code, terminal.details)
        return accepted(run_id)

    async def _drive(
        self, agent: Agent, scope: Scope, prompt: Prompt, outcome: asyncio.Future[AgentEvent | None]
    ) -> None:
        terminal: AgentEvent | None = None
        try:
            async with closing(agent.invoke(scope, prompt)) as stream:
                async for event in stream:
                    if is_terminal(event):
                        terminal = event
                        if not outcome.done():
                            outcome.set_result(event)
        except Exception:  # MUST 2 says the stream never raises; a broken agent is logged, not lost
            log.exception("[control] detached run of session %s failed", scope.session)
        finally:
            if not outcome.done():
                outcome.set_result(terminal)
        if isinstance(terminal, Failed):
            log.debug("[control] detached run of session %s failed: %s", scope.session, terminal.details)

    async def aclose(self, within: float = CLOSE_GRACE_S) -> None:
        """Cancel every run still going (their streams close, so each run aborts) and wait up to
        ``within`` seconds for them to settle."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=within)


async def _run_started(events: SessionEventStream) -> str | None:
    """The ``runId`` of the first ``run_started`` the subscription delivers."""
    try:
        async for event in events:
            if event.type == "run_started":
                return event.run_id
    except SessionEventsClosed:
        pass
    return None
