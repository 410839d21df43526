"""The hub's durable writes: ``update``, ``fork`` and ``delete``, and the owner's settings writes.

Writes run between runs, under the session's lease (``session_busy`` while a run or another
write holds it, retryable at idle), and only on a session that exists (``no_such_session``:
sessions are created by invoke or fork). An update is validated as a whole before anything is
written, so a rejected patch leaves nothing behind; its fields are then written as separate
journal entries (a leaf move, ``session_info``, ``model_change``, ``thinking_level_change``), and a
failure between them answers ``partial_update`` naming what landed, after a ``state_changed``
reporting the record as it now is. One ``state_changed`` reports each accepted patch.

:func:`write_settings` is the same write for the agent's owner (chat's ``/model``, ``/thinking``,
a new session carrying the settings chosen before, ``--model`` pinned on a session), which the
hub's owner face (:mod:`.owner`) validates with its own messages. Both build their entries with
:func:`settings_entries` and commit through :func:`_apply` under the lease, with one
``state_changed`` to the hub's watchers (the web chat, ``attach``, ``/control/.../events``): there
is one way a session's model or thinking level is written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from fastagent_cli.control import (
    BOUNDARY_COMMAND_FAILED,
    INVALID_COMMAND,
    NO_SUCH_SESSION,
    PARTIAL_UPDATE,
    SESSION_BUSY,
    ActionResult,
    SessionUpdate,
    accepted,
    rejected,
)
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.boundary import BUSY_MESSAGE, no_such_session, session_exists, state_changed
from fastagent_cli.engine.settings import SessionSettings, resolve_session_settings
from fastagent_cli.errors import FastagentError, ModelError, SessionBusyError, SessionError, one_line
from fastagent_cli.messages import THINKING_LEVELS
from fastagent_cli.models.types import ModelInfo
from fastagent_cli.sessions.record import SessionRecord, is_position
from fastagent_cli.sessions.store import ForkConflict

__all__ = [
    "SettingsDecision",
    "delete_session",
    "fork_session",
    "settings_entries",
    "update_session",
    "write_settings",
]

log = logging.getLogger("fastagent.control")


MAX_NAME_CHARS = 200
"""A session's display name: a title, not a document (the list, the tab and the header show it)."""


def _invalid(message: str) -> ActionResult:
    return rejected(INVALID_COMMAND, message)


def addressable(session: str) -> bool:
    """Can a client address this id? URL normalisation eats ``""``, ``.`` and ``..``."""
    return session not in ("", ".", "..")


def _check_payload(engine: EngineAgent, patch: SessionUpdate) -> ActionResult | ModelInfo | None:
    """What can be checked without the session: the refusal, or the model a patch names."""
    if patch.name is not None and not patch.name.strip():
        return _invalid("name must not be empty")
    if patch.name is not None and len(patch.name) > MAX_NAME_CHARS:
        return _invalid(f"name must be at most {MAX_NAME_CHARS} characters (it has {len(patch.name)})")
    if patch.thinking_level is not None and patch.thinking_level not in THINKING_LEVELS:
        return _invalid(
            f'unknown thinking level "{patch.thinking_level}" — state().availableThinkingLevels lists '
            "what this session accepts"
        )
    if patch.model is None:
        return None
    try:
        return engine.config.models.resolve(patch.model)
    except ModelError:
        return _invalid(
            f'unknown model "{patch.model}" — capabilities().modelSelection lists the allowed specs'
        )


def _planned(
    engine: EngineAgent, record: SessionRecord, patch: SessionUpdate, model: ModelInfo | None
) -> ActionResult | SessionSettings:
    """Validate the patch against the session; the settings it leads to."""
    leaf = patch.leaf_entry_id
    if leaf is not None:
        entry = record.by_id.get(leaf)
        if entry is None or not is_position(entry):
            return _invalid(f'entry "{leaf}" is not one entries() publishes for session "{record.session}"')
    context = record.context(leaf)
    settings = resolve_session_settings(context, engine.config.models, engine.config.thinking_level)
    if model is not None:
        settings = SessionSettings(model, settings.requested_thinking)
    level = patch.thinking_level
    if level is not None and level not in settings.available_thinking:
        allowed = ", ".join(settings.available_thinking)
        return _invalid(f'thinking level "{level}" is not supported by {settings.spec} (allowed: {allowed})')
    return settings


async def update_session(engine: EngineAgent, session: str, patch: SessionUpdate) -> ActionResult:
    checked = _check_payload(engine, patch)
    if isinstance(checked, ActionResult):
        return checked
    store = engine.store
    if engine.runs.status(session) != "idle":
        return rejected(SESSION_BUSY, BUSY_MESSAGE)
    if not await session_exists(store, session):
        return no_such_session(session)
    try:
        async with store.leased(session):
            record = await store.open_if_exists(session)
            if record is None:
                return no_such_session(session)
            return await _write(engine, record, patch, checked)
    except SessionBusyError:
        return rejected(SESSION_BUSY, BUSY_MESSAGE)
    except FastagentError as exc:  # the store cannot be asked, or the record read
        return rejected(BOUNDARY_COMMAND_FAILED, one_line(exc.message))


async def _write(
    engine: EngineAgent, record: SessionRecord, patch: SessionUpdate, model: ModelInfo | None
) -> ActionResult:
    """Validate the patch against the leased record, then write its fields one entry each."""
    planned = _planned(engine, record, patch, model)
    if isinstance(planned, ActionResult):
        return planned
    steps: list[Step] = []
    if patch.leaf_entry_id is not None:
        target = patch.leaf_entry_id
        steps.append((("leafEntryId",), lambda: record.move_leaf(target)))
    if patch.name is not None:
        label = patch.name.strip()
        steps.append((("name",), lambda: record.set_name(label)))
    for entry in settings_entries(model, patch.thinking_level):
        steps.append(_appending(record, [entry]))
    return await _commit(engine, record, steps)


Step = tuple[tuple[str, ...], Callable[[], object]]
"""One write of a patch: the wire fields it changes, and the call on the leased record."""

_SETTING_FIELDS = {"model_change": "model", "thinking_level_change": "thinkingLevel"}
"""The wire field each settings entry changes."""


def settings_entries(model: ModelInfo | None, thinking: str | None) -> list[tuple[str, dict[str, Any]]]:
    """The journal entries that set a session's model and/or thinking level (pi's
    ``model_change`` / ``thinking_level_change``): the only shape either is written in."""
    entries: list[tuple[str, dict[str, Any]]] = []
    if model is not None:
        entries.append(("model_change", {"provider": model.provider, "modelId": model.id}))
    if thinking is not None:
        entries.append(("thinking_level_change", {"thinkingLevel": thinking}))
    return entries


def _appending(record: SessionRecord, entries: Sequence[tuple[str, dict[str, Any]]]) -> Step:
    fields = tuple(dict.fromkeys(_SETTING_FIELDS[kind] for kind, _ in entries if kind in _SETTING_FIELDS))
    return fields, lambda: record.append_many(list(entries))


async def _commit(engine: EngineAgent, record: SessionRecord, steps: Sequence[Step]) -> ActionResult:
    """:func:`_apply` for the control plane: a failure after some steps landed answers
    ``partial_update`` naming them, one before any ``boundary_command_failed``."""
    landed: list[str] = []
    try:
        await _apply(engine, record, steps, landed)
    except (FastagentError, OSError) as exc:
        reason = one_line(getattr(exc, "message", None) or str(exc))
        if not landed:
            return rejected(BOUNDARY_COMMAND_FAILED, f"nothing was written: {reason}")
        return rejected(PARTIAL_UPDATE, f"wrote {', '.join(landed)}, then failed: {reason}; read state()")
    return accepted()


async def _apply(
    engine: EngineAgent, record: SessionRecord, steps: Sequence[Step], landed: list[str]
) -> None:
    """The hub's one write: ``steps`` on the leased record in order, flushed, and one
    ``state_changed`` for the hub's watchers naming what landed (collected in ``landed``), also
    when a later step failed; the failure is raised."""
    try:
        for fields, step in steps:
            step()
            landed.extend(fields)
        await _flushed(record, landed)
    finally:
        if landed:
            engine.hub.publish(record.session, state_changed(record, engine.settings_of(record), landed))


SettingsDecision = Callable[[SessionRecord], tuple[Sequence[tuple[str, dict[str, Any]]], SessionSettings]]
"""Given the leased record: the entries to write (made by :func:`settings_entries`) and the
settings they lead to; raises (writing nothing) to refuse."""


async def write_settings(
    engine: EngineAgent, session: str, decide: SettingsDecision, *, create: bool = False
) -> SessionSettings:
    """The owner's settings write, through the same commit as :func:`update_session`: under the
    session's lease (SessionBusyError at once while a run or another write holds it), ``decide``
    on the record as it is, its entries appended whole as one write, and a ``state_changed`` for
    the hub's watchers when anything was written. A session that does not exist is created when
    ``create``, else SessionError; what the store could not write is raised."""
    store = engine.store
    async with store.leased(session):
        record = await (store.open_or_create(session) if create else store.open_if_exists(session))
        if record is None:
            raise SessionError(f"no session {session!r}")
        entries, result = decide(record)
        await _apply(engine, record, [_appending(record, entries)] if entries else [], [])
        return result


async def _flushed(record: SessionRecord, landed: list[str]) -> None:
    """Wait for a store that commits later: its appends land together (one transaction) or not
    at all, so a failure here means none of ``landed`` was written."""
    try:
        await record.flush()
    except FastagentError:
        landed.clear()
        raise


async def fork_session(engine: EngineAgent, source: str, at: str, into: str) -> ActionResult:
    if not addressable(into):
        return _invalid(f"{into!r} cannot be a session id (it is not addressable in a URL)")
    if into == source:
        return _invalid("a fork needs a new session id (into == from)")
    try:
        record = await engine.store.read(source)
    except FastagentError as exc:
        return rejected(BOUNDARY_COMMAND_FAILED, one_line(exc.message))
    if record is None:
        return rejected(NO_SUCH_SESSION, f'session "{source}" does not exist: there is nothing to fork')
    try:
        created = await engine.store.fork(record, at, into)
    except KeyError:
        return _invalid(f'entry "{at}" is not one entries() publishes for session "{source}"')
    except ForkConflict as exc:
        return _invalid(exc.message)
    except FastagentError as exc:
        return rejected(BOUNDARY_COMMAND_FAILED, one_line(exc.message))
    if created:
        log.info("[control] forked session %s at %s into %s", source, at, into)
    return accepted()


async def delete_session(engine: EngineAgent, session: str) -> ActionResult:
    if engine.runs.status(session) != "idle":
        return rejected(SESSION_BUSY, BUSY_MESSAGE)
    if not await session_exists(engine.store, session):
        return no_such_session(session)
    try:
        async with engine.store.leased(session):
            existed = await engine.store.delete(session)
    except SessionBusyError:
        return rejected(SESSION_BUSY, BUSY_MESSAGE)
    except FastagentError as exc:
        return rejected(BOUNDARY_COMMAND_FAILED, one_line(exc.message))
    if not existed:
        return no_such_session(session)
    engine.hub.end_session(session, "deleted")
    return accepted()
