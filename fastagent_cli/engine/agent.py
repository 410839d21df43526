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
from dataclasses import dataclass, field, replace
from typing import Any, cast

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
from fastagent_cli.control import SESSION_BUSY, ActionResult, InputItem, SessionEvent, accepted, rejected
from fastagent_cli.engine.activation import ActivationState
from fastagent_cli.engine.approvals import ApprovalDesk
from fastagent_cli.engine.boundary import start_compaction
from fastagent_cli.engine.budget import SpendLimits, UsageMeter
from fastagent_cli.engine.compaction import CompactionSettings
from fastagent_cli.engine.failures import INTERNAL_ERROR, describe_failure
from fastagent_cli.engine.hub import EventHub
from fastagent_cli.engine.ports import ModelPort, SystemPrompt, ToolSource
from fastagent_cli.control.projection import project
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.run_loop import run_loop
from fastagent_cli.engine.runs import Run, RunRegistry
from fastagent_cli.engine.settings import SessionSettings, resolve_session_settings
from fastagent_cli.engine.traces import traced_turn
from fastagent_cli.engine.turn import Emit, TurnFailure, TurnSetup
from fastagent_cli.errors import CredentialError, FastagentError, SessionBusyError
from fastagent_cli.logging_setup import TURN_FAILURE, bind_log_context
from fastagent_cli.messages import ThinkingLevel, ToolCall, now_ms
from fastagent_cli.models.credentials import missing_hint
from fastagent_cli.models.structured import OutputFormat, check_schema, output_format
from fastagent_cli.models.thinking import DEFAULT_THINKING_LEVEL
from fastagent_cli.models.types import ModelClient, ModelInfo, ModelRequest, ToolSpec
from fastagent_cli.sessions.inherit import Inheritance
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.sessions.store import SessionStore
from fastagent_cli.state.usage import UsageLedger
from fastagent_cli.tools.approval import ApprovalPolicy
from fastagent_cli.tools.base import RunScope, Tool

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
DEFAULT_TOOL_TIMEOUT_S = 600.0


@dataclass(slots=True)
class EngineConfig:
    """The ports and limits a run works with, fixed at assembly; prompt and tools are asked per run."""

    models: ModelPort
    sessions: SessionStore
    system_prompt: SystemPrompt
    tools: ToolSource
    cwd: str = "."
    thinking_level: ThinkingLevel = DEFAULT_THINKING_LEVEL
    max_tool_rounds: int = 50
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT_S
    """Seconds a tool call may run unless the tool sets its own ``timeout``; ``None``: no limit."""
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    hub: EventHub | None = None
    """Where session events go (a fresh hub when not given: watchers subscribe to ``agent.hub``)."""
    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """Which tool calls wait for a person (the tools' own flags count too)."""
    usage: UsageLedger | None = None
    """Where each answer's usage is recorded (none: not recorded, only the session record has it)."""
    limits: SpendLimits = field(default_factory=SpendLimits)


@dataclass(frozen=True, slots=True)
class BoundModel:
    """The model a session runs with right now, its key and its client."""

    model: ModelInfo
    thinking: ThinkingLevel
    api_key: str | None
    client: ModelClient


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
        self.approvals.resume = self._resume
        self._resumed: set[asyncio.Task[None]] = set()
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
            setup = await self._bind(scope, run, resume)
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

    async def _bind(self, scope: Scope, run: Run, resume: bool = False) -> TurnSetup:
        offered = await self.config.tools()  # first: a source may mount tools the prompt lists
        tools: dict[str, Tool] = {}
        for tool in offered:
            tools.setdefault(tool.name, tool)
        inherit = Inheritance(scope.parent_session, scope.branch_hints) if scope.parent_session else None
        store = self.config.sessions
        existing = await store.open_if_exists(scope.session)
        if existing is None and inherit is None:
            # A new session: a turn refused for configuration (no key, unknown script) writes nothing.
            bound = await self.bind_model(None)
            record = await store.open_or_create(scope.session)
        else:
            record = existing or await store.open_or_create(scope.session, inherit)
            bound = await self.bind_model(record)
        resumed = self._open_calls(record, run, resume)
        context = record.context()
        request = ModelRequest(
            model=bound.model,
            system=self.config.system_prompt(),
            messages=context.messages,
            thinking=bound.thinking,
            api_key=bound.api_key,
            session_id=scope.session,
            memo=record.memo,
        )
        self.overhead = (request.system, tuple(t.spec for t in tools.values()))
        return TurnSetup(
            request=request,
            client=bound.client,
            tools=tools,
            activation=ActivationState(list(tools.values()), record, context.activated_tools),
            record=record,
            run=run,
            cwd=self.config.cwd,
            max_tool_rounds=self.config.max_tool_rounds,
            retry=self.config.retry,
            compaction=self.config.compaction.for_window(bound.model.context_window),
            tool_timeout=self.config.tool_timeout,
            approvals=self.approvals,
            resume=resumed,
            meter=self._meter(scope.session),
        )

    def _open_calls(self, record: SessionRecord, run: Run, resume: bool) -> list[ToolCall]:
        """The leaf's tool calls still waiting for an approval (a restarted server's): what a
        resumed run finishes; a run for new input withdraws them first."""
        if not resume:
            self.approvals.withdraw(record, run, run.publish)
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

    async def _resume(self, session: str) -> ActionResult:
        """Start a run that re-enters ``session``'s turn at its open tool calls; it belongs to
        the server (follow it on the session's events)."""
        if self.runs.status(session) != "idle":
            return rejected(SESSION_BUSY, "another run holds this session; answer again once it settles")

        async def drive() -> None:
            async for event in self.run_inputs(session, [], resume=True):
                if isinstance(event, Failed):
                    log.warning(
                        "[approval] the resumed turn of session %s failed: %s", session, event.details
                    )

        task = asyncio.create_task(drive())
        self._resumed.add(task)
        task.add_done_callback(self._resumed.discard)
        await asyncio.sleep(0)  # the drive takes the lease and registers the run
        run = self.runs.active(session)
        return accepted(run.run_id if run is not None else None)

    def _meter(self, session: str) -> UsageMeter | None:
        if self.config.usage is None and not self.config.limits.any:
            return None
        return UsageMeter(self.config.usage, self.config.limits, session)

    async def bind_model(self, record: SessionRecord | None) -> BoundModel:
        """The session's model (overrides applied, thinking clamped), its key and its client;
        CredentialError when no usable key exists (``record`` ``None``: a session not created yet)."""
        settings = self.settings_of(record)
        if settings.ignored_model is not None:
            log.warning(
                "[agent] session model %s is unknown; using %s", settings.ignored_model, settings.spec
            )
        model = settings.model
        credential = await self.config.models.acquire(model)  # may renew a subscription login
        if credential.expired(now_ms()):
            raise CredentialError(
                f"the {model.provider} login expired and this agent cannot renew it: "
                f"run `fastagent login {model.provider}`"
            )
        if credential.missing:
            raise CredentialError(f"no API key for provider {model.provider}: {missing_hint(model)}")
        if credential.base_url and credential.base_url != model.base_url:
            model = replace(model, base_url=credential.base_url)  # the login names its API host
        return BoundModel(model, settings.thinking, credential.key, self.config.models.client_for(model))

    def settings_of(self, record: SessionRecord | None) -> SessionSettings:
        """The model and thinking level ``record`` runs with (overrides resolved and clamped;
        ``None``: a session that does not exist yet)."""
        context = record.context() if record is not None else None
        return resolve_session_settings(context, self.config.models, self.config.thinking_level)

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
        for task in list(self._resumed):
            task.cancel()
        stopping: list[asyncio.Task[Any]] = [*self.runs.stop_compactions(), *self._resumed]
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
