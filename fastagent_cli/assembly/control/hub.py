"""The local session hub: :class:`~fastagent_cli.control.SessionControl` over the engine.

Reads come from the session store (never repaired, never written) and the engine's run registry;
live events from the engine's event hub; run actions reach the engine's runs; writes go through
the store under the session's lease (:mod:`.writes`), the agent owner's as well as the control
plane's (:attr:`LocalSessionControl.owner`, :mod:`.owner`). ``writes=False`` (``session_control`` off)
keeps the run actions and reads and refuses durable writes (update, fork, delete, compact) with
``unsupported_capability``, reporting so in :meth:`LocalSessionControl.capabilities`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from fastagent_cli.assembly.control.owner import SessionOwner
from fastagent_cli.assembly.control.views import listing, published_entries, session_usage
from fastagent_cli.assembly.control.writes import delete_session, fork_session, update_session
from fastagent_cli.assembly.remote_actions import Action, RemoteActions
from fastagent_cli.assembly.shared_hub import RemoteRun, SharedEventHub
from fastagent_cli.contract import Prompt
from fastagent_cli.control import (
    INVALID_COMMAND,
    UNSUPPORTED_CAPABILITY,
    UPDATE_FIELDS,
    ActionResult,
    AgentCommand,
    Capabilities,
    Decision,
    PendingApproval,
    PendingPrompts,
    SessionEntries,
    SessionListing,
    SessionState,
    SessionsUnavailable,
    SessionTotals,
    SessionUpdate,
    accepted,
    pending_on_branch,
    rejected,
)
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.hub import Subscription
from fastagent_cli.errors import FastagentError, SessionError, one_line
from fastagent_cli.messages import now_ms
from fastagent_cli.sessions.record import SessionRecord

__all__ = ["CommandSource", "LocalSession", "LocalSessionControl", "LocalSessions"]

log = logging.getLogger("fastagent.control")

CommandSource = Callable[[], Awaitable[Sequence[AgentCommand]]]


def _unsupported(what: str) -> ActionResult:
    return rejected(
        UNSUPPORTED_CAPABILITY,
        f"{what} is not enabled on this deployment (session_control = true in fastagent.toml enables it)",
    )


class LocalSession:
    """One session, bound by id: no IO until a method is called."""

    def __init__(self, hub: LocalSessionControl, session: str) -> None:
        self._hub = hub
        self._engine = hub.engine
        self._id = session

    @property
    def id(self) -> str:
        return self._id

    # --- reads ----------------------------------------------------------------------------------

    async def state(self) -> SessionState:
        engine = self._engine
        run = engine.runs.active(self._id)
        status = engine.runs.status(self._id)
        pending = run.pending() if run is not None else PendingPrompts()
        run_id = run.run_id if run is not None else None
        elsewhere = self._hub.remote_run(self._id) if status == "idle" else None
        if elsewhere is not None:  # another instance runs it (a shared database)
            status, run_id, pending = "running", elsewhere.run_id, elsewhere.pending
        try:
            record = await engine.store.read(self._id)
        except FastagentError as exc:  # observation is total: the fault surfaces where codes exist
            log.warning("[control] session %s is unreadable: %s", self._id, one_line(exc.message))
            return SessionState(status, active_run_id=run_id, pending=pending)
        settings = engine.settings_of(record)
        return SessionState(
            status=status,
            name=record.name if record is not None else None,
            active_run_id=run_id,
            model=settings.spec,
            thinking_level=settings.thinking,
            available_thinking_levels=settings.available_thinking,
            pending=pending,
            usage=(
                session_usage(record, settings.model.context_window, engine.overhead)
                if record is not None
                else None
            ),
            leaf_entry_id=record.leaf_id if record is not None else None,
            approvals=_approvals(record),
            totals=await self._totals(),
        )

    async def _totals(self) -> SessionTotals | None:
        ledger = self._engine.config.usage
        if ledger is None:
            return None
        try:
            sums = (await ledger.session_totals([self._id])).get(self._id)
        except (OSError, FastagentError) as exc:  # observation is total
            log.warning("[control] usage of session %s is unreadable: %s", self._id, exc)
            return None
        if sums is None:
            return None
        return SessionTotals(
            sums.requests, sums.input, sums.output, sums.cache_read, sums.cache_write, sums.cost
        )

    async def entries(self, since: str | None = None) -> SessionEntries:
        try:
            record = await self._engine.store.read(self._id)
        except FastagentError as exc:
            log.warning("[control] session %s is unreadable: %s", self._id, one_line(exc.message))
            return SessionEntries()
        if record is None:
            return SessionEntries()
        return SessionEntries(tuple(published_entries(record, since)), record.leaf_id)

    def events(self) -> Subscription:
        return self._engine.hub.subscribe(self._id)

    # --- run actions ----------------------------------------------------------------------------

    async def steer(self, prompt: Prompt) -> ActionResult:
        if not prompt.text.strip():
            return rejected(INVALID_COMMAND, "a steer needs text")
        relayed = await self._hub.relay(self._id, "steer", prompt)
        return relayed or self._engine.runs.enqueue(self._id, "steer", prompt)

    async def follow_up(self, prompt: Prompt) -> ActionResult:
        if not prompt.text.strip():
            return rejected(INVALID_COMMAND, "a follow-up needs text")
        relayed = await self._hub.relay(self._id, "follow_up", prompt)
        return relayed or self._engine.runs.enqueue(self._id, "follow_up", prompt)

    async def abort(self) -> ActionResult:
        relayed = await self._hub.relay(self._id, "abort")
        return relayed or self._engine.runs.abort(self._id)

    # --- writes ---------------------------------------------------------------------------------

    async def compact(self, instructions: str | None = None) -> ActionResult:
        if not self._hub.writes:
            return _unsupported("compact")
        return await self._engine.compact(self._id, instructions)

    async def update(self, patch: SessionUpdate) -> ActionResult:
        fields = patch.fields()
        if not fields:
            return accepted()
        if not self._hub.writes:
            return _unsupported(f"update ({', '.join(fields)})")
        return await update_session(self._engine, self._id, patch)

    async def answer_approval(
        self, approval_id: str, decision: Decision, *, by: str, reason: str | None = None
    ) -> ActionResult:
        return await self._engine.approvals.answer(self._id, approval_id, decision, by=by, reason=reason)

    async def delete(self) -> ActionResult:
        if not self._hub.writes:
            return _unsupported("delete")
        return await delete_session(self._engine, self._id)


def _approvals(record: SessionRecord | None) -> tuple[PendingApproval, ...]:
    """The record's requests still waiting (expired ones are no longer answerable)."""
    if record is None:
        return ()
    now = now_ms()
    return tuple(p for p in pending_on_branch(record.ancestors()) if not p.expired(now))


class LocalSessions:
    def __init__(self, hub: LocalSessionControl) -> None:
        self._hub = hub

    async def list(self) -> Sequence[SessionListing]:
        try:
            summaries = await self._hub.engine.store.listing(None)
        except SessionError as exc:
            log.error("[control] the session list cannot be read: %s", exc.message)
            raise SessionsUnavailable(exc.message) from exc
        return listing(summaries)

    async def fork(self, from_session: str, at: str, into: str) -> ActionResult:
        if not self._hub.writes:
            return _unsupported("fork")
        return await fork_session(self._hub.engine, from_session, at, into)

    def get(self, session: str) -> LocalSession:
        return LocalSession(self._hub, session)


class LocalSessionControl:
    """The hub of one engine. ``commands`` lists what a ``/`` composer offers (re-read per call;
    an agent without a definition has none); ``writes`` enables durable writes."""

    def __init__(
        self, engine: EngineAgent, *, commands: CommandSource | None = None, writes: bool = True
    ) -> None:
        self.engine = engine
        self.writes = writes
        self._commands = commands
        self._sessions = LocalSessions(self)
        self._owner: SessionOwner | None = None
        hub = engine.hub
        self._remote = RemoteActions(hub, engine.runs) if isinstance(hub, SharedEventHub) else None

    def remote_run(self, session: str) -> RemoteRun | None:
        """The run of ``session`` on another instance (a shared database), if any."""
        hub = self.engine.hub
        return hub.remote_run(session) if isinstance(hub, SharedEventHub) else None

    async def relay(self, session: str, kind: Action, prompt: Prompt | None = None) -> ActionResult | None:
        """A run action for a run another instance drives, answered there; ``None`` when this
        instance has the session's run (or nobody does): answer it here."""
        if self._remote is None or self.engine.runs.status(session) != "idle":
            return None
        return await self._remote.request(session, kind, prompt)

    @property
    def sessions(self) -> LocalSessions:
        return self._sessions

    @property
    def owner(self) -> SessionOwner:
        """The agent owner's face (chat, ``invoke``): its reads, its settings writes through this
        hub's write path (whatever :attr:`writes` says), its ``/compact``."""
        if self._owner is None:
            self._owner = SessionOwner(self.engine)
        return self._owner

    async def capabilities(self) -> Capabilities:
        writes = self.writes
        return Capabilities(
            steering=True,
            follow_up=True,
            manual_compaction=writes,
            model_selection=self._allowed_models() if writes else None,
            thinking_level=writes,
            navigate=writes,
            tool_progress=True,
            usage=True,
            updatable=UPDATE_FIELDS if writes else (),
            fork=writes,
            delete=writes,
        )

    def _allowed_models(self) -> tuple[str, ...]:
        """The catalog and ``models.json`` specs, and the agent's own model when it is neither
        (a ``scripted/...`` or a ``provider/model`` outside the catalog): so a session moved to
        another model can always be moved back."""
        models = self.engine.config.models
        specs = list(models.specs())
        try:
            default = models.default().spec
        except FastagentError:
            return tuple(specs)
        return tuple(specs) if default in specs else (default, *specs)

    async def commands(self) -> Sequence[AgentCommand]:
        return [] if self._commands is None else list(await self._commands())
