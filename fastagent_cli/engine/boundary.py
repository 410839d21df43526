"""Writes between runs that need the engine: manual compaction, and the ``state_changed`` event.

A manual compaction takes the session's lease like a run (``session_busy`` while one holds it),
is accepted as soon as it is admitted (the session exists, there is something to compact, the
model is usable), then summarises in the background: ``compaction_started`` now, and
``compaction_finished{summary|error|aborted}`` once it is over and the lease is free again, so a
watcher that acts on it finds the session idle. ``abort`` stops it
(``compaction_finished{aborted: true}``). The session reads ``compacting`` meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from typing import Any, Protocol

from fastagent_cli.control import (
    BOUNDARY_COMMAND_FAILED,
    NO_SUCH_SESSION,
    NOTHING_TO_COMPACT,
    SESSION_BUSY,
    ActionResult,
    SessionEvent,
    accepted,
    rejected,
)
from fastagent_cli.engine.compaction import (
    CompactionFailed,
    CompactionPlan,
    CompactionResult,
    CompactionSettings,
    SummaryModel,
    compact,
    context_tokens,
    prepare_compaction,
)
from fastagent_cli.engine.hub import EventHub
from fastagent_cli.engine.retry import RetryPolicy
from fastagent_cli.engine.runs import RunRegistry
from fastagent_cli.engine.settings import SessionSettings
from fastagent_cli.errors import FastagentError, SessionBusyError, one_line
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.sessions.store import SessionStore

__all__ = [
    "BUSY_MESSAGE",
    "Engine",
    "compaction_outcome",
    "no_such_session",
    "session_exists",
    "start_compaction",
    "state_changed",
]

log = logging.getLogger("fastagent.control")

BUSY_MESSAGE = "session busy: a run (or another write) is in flight; retry when it is idle"


class _Bound(Protocol):
    @property
    def client(self) -> Any: ...

    @property
    def model(self) -> Any: ...

    @property
    def api_key(self) -> str | None: ...


class Engine(Protocol):
    """What a boundary write needs of the engine (:class:`~fastagent_cli.engine.agent.EngineAgent`)."""

    hub: EventHub
    runs: RunRegistry

    @property
    def store(self) -> SessionStore: ...

    @property
    def compaction(self) -> CompactionSettings: ...

    @property
    def retry(self) -> RetryPolicy: ...

    async def bind_model(self, record: SessionRecord) -> _Bound: ...

    def settings_of(self, record: SessionRecord | None) -> SessionSettings: ...


def no_such_session(session: str) -> ActionResult:
    return rejected(
        NO_SUCH_SESSION,
        f'session "{session}" does not exist: sessions are created by invoke (or fork), not by writes',
    )


async def session_exists(store: SessionStore, session: str) -> bool:
    """Checked before a write takes the lease (which would leave a lock file for a session that
    does not exist). An unreadable record exists."""
    try:
        return await store.read(session) is not None
    except FastagentError:
        return True


def state_changed(record: SessionRecord, settings: SessionSettings, changed: Collection[str]) -> SessionEvent:
    """``state_changed`` carrying the fields a write changed (wire names), as the record now has
    them, the way the original reports it: a new model brings the thinking level it resolves to,
    a navigation (``leafEntryId``) the model and level of the branch it moved to. The leaf is
    reported only for a navigation: every turn moves it too, and that is read from entries()."""
    fields = set(changed)
    if "model" in fields:
        fields.add("thinkingLevel")
    if "leafEntryId" in fields:
        fields.update(("model", "thinkingLevel"))
    data: dict[str, Any] = {}
    if "name" in fields:
        data["name"] = record.name
    if "model" in fields:
        data["model"] = settings.spec
    if "thinkingLevel" in fields:
        data["thinkingLevel"] = settings.thinking
    if "leafEntryId" in fields and record.leaf_id is not None:
        data["leafEntryId"] = record.leaf_id
    return SessionEvent("state_changed", data)


def compaction_outcome(record: SessionRecord, result: CompactionResult) -> dict[str, Any]:
    """``compaction_finished``'s data after a compaction that worked: the ``summary``, and (beyond
    the spec's fields, for a client that shows them) ``tokensBefore`` and ``tokensAfter``, the
    estimated size of the messages the context now starts with."""
    after = context_tokens(record.context().messages)
    return {"summary": result.summary, "tokensBefore": result.tokens_before, "tokensAfter": after}


async def start_compaction(agent: Engine, session: str, instructions: str | None) -> ActionResult:
    """Admit a manual compaction of ``session`` (see the module docstring)."""
    store = agent.store
    if not await session_exists(store, session):
        return no_such_session(session)
    try:
        async with contextlib.AsyncExitStack() as held:
            await held.enter_async_context(store.leased(session))
            record = await store.open_if_exists(session)
            if record is None:
                return no_such_session(session)
            settings = agent.compaction.for_window(agent.settings_of(record).model.context_window)
            plan = prepare_compaction(
                record.path(), settings.keep_recent_tokens, settings.max_kept_tokens, manual=True
            )
            if isinstance(plan, str):
                return rejected(NOTHING_TO_COMPACT, plan)
            bound = await agent.bind_model(record)
            target = SummaryModel(bound.client, bound.model, bound.api_key, agent.retry, session)
            lease = held.pop_all()  # the summary's task holds the lease from here on
            task = asyncio.create_task(
                _compact(agent, session, record, plan, target, settings, instructions, lease)
            )
            agent.runs.compacting(session, task)
            started = {"reason": "manual", "tokens": plan.tokens_before}
            agent.hub.publish(session, SessionEvent("compaction_started", started))
            return accepted()
    except SessionBusyError:
        return rejected(SESSION_BUSY, BUSY_MESSAGE)
    except FastagentError as exc:
        return rejected(BOUNDARY_COMMAND_FAILED, one_line(exc.message))


async def _compact(
    agent: Engine,
    session: str,
    record: SessionRecord,
    plan: CompactionPlan,
    target: SummaryModel,
    settings: CompactionSettings,
    instructions: str | None,
    lease: contextlib.AsyncExitStack,
) -> None:
    def on_retry(attempt: int, limit: int, delay: int, error: str) -> None:
        log.warning(
            "[control] compaction retry %d/%d in %d ms (session %s): %s",
            attempt,
            limit,
            delay,
            session,
            error,
        )
        data = {
            "operation": "compaction",
            "attempt": attempt,
            "maxAttempts": limit,
            "delayMs": delay,
            "error": error,
        }
        agent.hub.publish(session, SessionEvent("retry_scheduled", data))

    outcome: dict[str, Any]
    changed: SessionEvent | None = None
    try:
        result = await compact(record, plan, target, settings, instructions=instructions, on_retry=on_retry)
        await record.flush()
        outcome = compaction_outcome(record, result)
        changed = state_changed(record, agent.settings_of(record), ("leafEntryId",))  # the summary
    except asyncio.CancelledError:
        outcome = {"aborted": True}  # a deliberate abort, not a failure
    except CompactionFailed as exc:
        outcome = {"error": str(exc)}
    except Exception as exc:
        log.exception("[control] compaction of session %s failed", session)
        outcome = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        agent.runs.compacted(session)
        await lease.aclose()
    if changed is not None:
        agent.hub.publish(session, changed)
    agent.hub.publish(session, SessionEvent("compaction_finished", outcome))
