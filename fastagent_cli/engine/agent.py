"""The engine's :class:`~fastagent_cli.contract.Agent`.

``invoke`` is the whole contract:

1. take the session's lease (a second concurrent turn gets one ``failed{code: session_busy}``);
2. register the run (steer, follow_up and abort reach it through :attr:`EngineAgent.runs`) and
   publish ``run_started`` on the event hub (:attr:`EngineAgent.hub`);
3. open or create the session record (dangling tool calls repaired), bind the run to it and run it
   as a task (:mod:`.run_loop`): every step is a session event, and the invoke stream is their
   projection (:mod:`.projection`);
4. at the settle: release the lease, publish ``run_settled``, then emit exactly one terminal
   (``completed`` / ``failed``; ``failed{code: aborted}`` after an abort); iteration never raises;
5. on early exit (``break``, ``aclose()``, task cancellation) cancel the run, which aborts the
   HTTP stream and kills tool processes, then release the lease; no terminal is emitted then.

Nothing is resident between runs: continuity lives in the session store (MUST 6). The engine is
built from ports (:mod:`.ports`): a session store, a model port, a system prompt and a tool source,
each asked afresh per run; it never reads a directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastagent_cli.contract import (
    ABORTED_CODE,
    SESSION_BUSY_CODE,
    AgentEvent,
    Completed,
    Failed,
    Prompt,
    Scope,
    as_prompt,
    as_scope,
)
from fastagent_cli.control import ActionResult, InputItem, SessionEvent
from fastagent_cli.control.projection import project
from fastagent_cli.engine.approvals import ApprovalDesk
from fastagent_cli.engine.binding import (
    DEFAULT_TOOL_TIMEOUT_S,
    BoundModel,
    EngineConfig,
    bind_model,
    bind_turn,
    settings_of,
)
from fastagent_cli.engine.boundary import start_compaction
from fastagent_cli.engine.compaction import CompactionSettings
from fastagent_cli.engine.failures import INTERNAL_ERROR, describe_failure
from fastagent_cli.engine.hub import EventHub
from fastagent_cli.engine.resume import Resumer
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.run_loop import run_loop
from fastagent_cli.engine.runs import Run, RunRegistry
from fastagent_cli.engine.settings import SessionSettings
from fastagent_cli.engine.traces import traced_turn
from fastagent_cli.engine.turn import Emit, TurnFailure
from fastagent_cli.errors import SessionBusyError
from fastagent_cli.logging_setup import TURN_FAILURE, bind_log_context
from fastagent_cli.models.structured import OutputFormat, check_schema, output_format
from fastagent_cli.models.types import ToolSpec
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.sessions.store import SessionStore
from fastagent_cli.tools.base import RunScope

__all__ = [
    "ABORTED_DETAILS",
    "RESTARTING_CODE",
    "BUSY_DETAILS",
    "DEFAULT_TOOL_TIMEOUT_S",
    "BoundModel",
    "EngineAgent",
    "EngineConfig",
]

log = logging.getLogger("fastagent.agent")
BUSY_DETAILS = "session busy: a turn is already in flight for this session"
ABORTED_DETAILS = "the run was aborted"
RESTARTING_CODE = "server_restarting"
"""``failed.code`` of a run a ``dev`` reload ended after its drain timeout (retryable)."""
RESTARTING_DETAILS = "the dev server reloaded its code before the answer finished; send it again"
_CANCEL_GRACE_S = 5.0
INVALID_SCHEMA_CODE = "invalid_schema"
"""``failed.code`` of a structured run whose schema is not a usable JSON Schema."""


@dataclass(slots=True)
class _Settled:
    """What the run came to: the terminal the caller sees and the ``run_settled`` data."""

    terminal: Completed | Failed
    status: str

    def event(self, run: Run) -> SessionEvent:
        if isinstance(self.terminal, Completed):
            return run.event("run_settled", status="completed")
        error: dict[str, Any] = {"message": self.terminal.details, "retryable": self.terminal.retryable}
        if self.terminal.code is not None:
            error["code"] = self.terminal.code
        return run.event("run_settled", status=self.status, error=error)


_ABORTED = _Settled(Failed(ABORTED_DETAILS, False, ABORTED_CODE), "aborted")


def _settlement(work: asyncio.Task[_Settled], publish: Callable[[SessionEvent], None], run: Run) -> _Settled:
    if work.cancelled():
        if run.ended_by is not None:
            return _Settled(run.ended_by, "failed")  # the server ended it (a dev reload)
        return _ABORTED  # else cancelled only by an abort (a caller that left reads nothing more)
    error = work.exception()
    if error is not None:  # a BaseException the run did not turn into a settlement
        log.error("[agent] a run crashed: %s: %s", type(error).__name__, error)
        publish(SessionEvent("serving_error", {"message": "the run crashed outside its outcome"}))
        return _Settled(Failed("internal error", False, INTERNAL_ERROR), "failed")
    return work.result()


class EngineAgent:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.hub = config.hub if config.hub is not None else EventHub()
        self.runs = RunRegistry()
        self.approvals = ApprovalDesk(config.approvals)
        """Tool calls waiting for a person; ``await agent.approvals.answer(...)`` releases one."""
        self.approvals.read = config.sessions.read
        self._resumer = Resumer(self.runs, lambda session: self.run_inputs(session, [], resume=True))
        self.approvals.resume = self._resumer
        self.overhead: tuple[str, tuple[ToolSpec, ...]] = ("", ())
        """The system prompt and tool definitions the last run was bound with: what a context
        meter adds to the messages (one measure with the requests' fit to the window)."""

    # --- the contract -------------------------------------------------------------------------

    def invoke(self, scope: Scope | str, prompt: Prompt | str) -> AsyncIterator[AgentEvent]:
        return self.run_inputs(scope, [as_prompt(prompt)])

    async def run_inputs(
        self,
        scope: Scope | str,
        inputs: Sequence[InputItem],
        *,
        observe: Callable[[SessionEvent], None] | None = None,
        resume: bool = False,
    ) -> AsyncIterator[AgentEvent]:
        """:meth:`invoke` for several inputs opening one run (user prompts and notices, recorded
        in order before the first model call); ``observe`` sees every session event of the run
        (before its projection reaches the stream); ``resume``: no inputs, the run re-enters the
        session's turn at its open tool calls (an approval answered after a restart)."""
        bound = as_scope(scope)
        session = bound.session
        lease = contextlib.AsyncExitStack()  # holds the session's lease for the run
        try:
            await lease.enter_async_context(self.config.sessions.leased(session))
        except SessionBusyError:
            yield Failed(BUSY_DETAILS, True, SESSION_BUSY_CODE)
            return
        except Exception as exc:  # MUST 2: an unwritable store is a failed event, not a raise
            yield self._failed(bound, exc, ())
            return
        queue: asyncio.Queue[AgentEvent | _Settled] = asyncio.Queue()

        def emit(event: SessionEvent) -> None:
            self.hub.publish(session, event)
            if observe is not None:
                observe(event)
            projected = project(event)
            if projected is not None:
                queue.put_nowait(projected)

        run = self.runs.begin(session, emit)
        emit(run.event("run_started"))
        work = asyncio.create_task(self._work(run, bound, list(inputs), emit, resume))
        run.work = work
        watchers = functools.partial(self.hub.publish, session)
        work.add_done_callback(lambda task: queue.put_nowait(_settlement(task, watchers, run)))
        settled: _Settled | None = None
        try:
            while True:
                item = await queue.get()
                if isinstance(item, _Settled):
                    settled = item
                    break
                yield item
        finally:
            if settled is None and not work.done():
                work.cancel()  # the caller left: stop the run (model stream, tools), settle nothing
                with contextlib.suppress(BaseException):
                    await asyncio.wait({work}, timeout=_CANCEL_GRACE_S)
            # The run is over: free the session before anyone hears so, so a watcher that acts on
            # run_settled (or a caller that stops reading at the terminal) finds it free.
            await lease.aclose()
            self.runs.end(run)
            dropped = run.drop_queues()  # as the original: the queues read empty before the settle
            if dropped is not None:
                self.hub.publish(session, dropped)
            self.hub.publish(session, (settled or _ABORTED).event(run))
        assert settled is not None  # the loop only ends by a settlement (or leaves through finally)
        yield settled.terminal

    async def _work(
        self, run: Run, scope: Scope, inputs: list[InputItem], emit: Emit, resume: bool = False
    ) -> _Settled:
        with traced_turn(scope.session, run.run_id) as settle:
            settled = await self._turn(run, scope, inputs, emit, resume)
            settle(settled)
            return settled

    async def _turn(
        self, run: Run, scope: Scope, inputs: list[InputItem], emit: Emit, resume: bool = False
    ) -> _Settled:
        started = time.monotonic()
        session = scope.session
        secrets: list[str | None] = []
        tools_scope = RunScope(run.run_id)
        bind_log_context(session=session, turn=run.run_id)  # this run's task (and its tools') lines
        try:
            if log.isEnabledFor(logging.DEBUG):
                preview = " ".join(" ".join(i.text for i in inputs).split())[:200]
                log.debug("[agent] ▶ turn session=%s ← %s", session, preview)
            output = _output_format(inputs)  # a schema it cannot use: refused before anything is written
            setup = await bind_turn(self.config, self.approvals, scope, run, resume)
            self.overhead = (setup.request.system, tuple(t.spec for t in setup.tools.values()))
            setup.scope = tools_scope
            setup.output = output
            secrets.append(setup.request.api_key)
            outcome = await run_loop(setup, inputs, emit)
            await setup.record.flush()  # a store that commits later: completed means written
            data: dict[str, Any] = {
                "model": setup.request.model.spec,
                "usage": outcome.usage,
                "stopReason": outcome.stop_reason,
            }
            if setup.output is not None:
                data["output"] = outcome.output
            log.debug("[agent] ■ turn session=%s completed in %.0f ms", session, _ms(started))
            return _Settled(Completed(data), "completed")
        except asyncio.CancelledError:
            log.debug("[agent] ■ turn session=%s stopped after %.0f ms", session, _ms(started))
            raise
        except Exception as exc:  # MUST 2: nothing escapes as a raise
            return _Settled(self._failed(scope, exc, secrets), "failed")
        finally:
            tools_scope.closed = True
            if tools_scope.holds:  # (no await otherwise: a plain run settles without a pause)
                await asyncio.shield(tools_scope.aclose())

    def _failed(self, scope: Scope, exc: Exception, secrets: Sequence[str | None]) -> Failed:
        """The caller gets the redacted event; the server log gets the specifics (never the key)."""
        event, detail = describe_failure(exc, secrets)
        if event.code == INTERNAL_ERROR:
            log.error("[agent] turn session=%s crashed: %s", scope.session, detail, exc_info=exc)
        else:
            # Tagged: a CLI that shows the failed event itself (invoke, fire) drops this line.
            log.warning("[agent] turn session=%s failed: %s", scope.session, detail, extra=TURN_FAILURE)
        return event

    # --- binding a run ------------------------------------------------------------------------

    async def bind_model(self, record: SessionRecord | None) -> BoundModel:
        """The session's model (overrides applied, thinking clamped), its key and its client;
        CredentialError when no usable key exists (``record`` ``None``: a session not created yet)."""
        return await bind_model(self.config, record)

    def settings_of(self, record: SessionRecord | None) -> SessionSettings:
        """The model and thinking level ``record`` runs with (overrides resolved and clamped;
        ``None``: a session that does not exist yet)."""
        return settings_of(self.config, record)

    @property
    def store(self) -> SessionStore:
        return self.config.sessions

    @property
    def compaction(self) -> CompactionSettings:
        return self.config.compaction

    @property
    def retry(self) -> RetryPolicy:
        return self.config.retry

    async def compact(self, session: str, instructions: str | None = None) -> ActionResult:
        """Compact ``session`` now (accepted fast; see :mod:`.boundary`)."""
        return await start_compaction(self, session, instructions)

    async def drain(self, within: float) -> int:
        """Let the runs and manual compactions in flight finish, for at most ``within`` seconds
        (a ``dev`` reload), then end each run still going with a retryable ``failed``
        (:data:`RESTARTING_CODE`) and stop the compactions. Returns how many runs were ended."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        # Polled: runs settle on their own tasks and there is no "all settled" event to wait on.
        while self.runs.busy() and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        ended = self.runs.end_all(Failed(RESTARTING_DETAILS, True, RESTARTING_CODE))
        deadline = loop.time() + _CANCEL_GRACE_S
        while self.runs.busy() and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        return ended

    async def aclose(self) -> None:
        """Stop manual compactions, end the watchers, close the model clients and, when it has
        ``aclose``, the tool source."""
        stopping: list[asyncio.Task[Any]] = [*self.runs.stop_compactions(), *self._resumer.stop()]
        if stopping:
            await asyncio.wait(stopping, timeout=_CANCEL_GRACE_S)
        self.hub.close()
        try:
            await self.config.models.aclose()
        finally:
            close = getattr(self.config.tools, "aclose", None)
            if close is not None:
                await close()


def _output_format(inputs: Sequence[InputItem]) -> OutputFormat | None:
    """The opening prompt's schema as the wire clients send it (TurnFailure ``invalid_schema``
    when it is not a usable JSON Schema)."""
    opening = inputs[0] if inputs else None
    schema = opening.output_schema if isinstance(opening, Prompt) else None
    if schema is None:
        return None
    error = check_schema(schema)
    if error is not None:
        raise TurnFailure(f"the schema is not usable: {error}", code=INVALID_SCHEMA_CODE)
    return output_format(schema)


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
