"""The hub's durable writes: ``update``, ``fork`` and ``delete``.

Writes run between runs, under the session's lease (``session_busy`` while a run or another
write holds it, retryable at idle), and only on a session that exists (``no_such_session``:
sessions are created by invoke or fork). An update is validated as a whole before anything is
written, so a rejected patch leaves nothing behind; its fields are then written as separate
journal entries (a leaf move, ``session_info``, ``model_change``, ``thinking_level_change``), and a
failure between them answers ``partial_update`` naming what landed, after a ``state_changed``
reporting the record as it now is. One ``state_changed`` reports each accepted patch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

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
from fastagent_cli.errors import FastagentError, ModelError, one_line
from fastagent_cli.messages import THINKING_LEVELS
from fastagent_cli.models.types import ModelInfo
from fastagent_cli.sessions.record import SessionRecord, is_position
from fastagent_cli.sessions.store import ForkConflict, release_lease

__all__ = ["delete_session", "fork_session", "update_session"]

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
        release = await store.lease(session)
    except FastagentError as exc:
        return rejected(BOUNDARY_COMMAND_FAILED, one_line(exc.message))
    if release is None:
        return rejected(SESSION_BUSY, BUSY_MESSAGE)
    try:
        try:
            record = await store.open_if_exists(session)
        except FastagentError as exc:
            return rejected(BOUNDARY_COMMAND_FAILED, one_line(exc.message))
        if record is None:
            return no_such_session(session)
        planned = _planned(engine, record, patch, checked)
        if isinstance(planned, ActionResult):
            return planned
        landed: list[str] = []
        steps: list[tuple[str, Callable[[], object]]] = []
        if patch.leaf_entry_id is not None:
            target = patch.leaf_entry_id
            steps.append(("leafEntryId", lambda: record.move_leaf(target)))
        if patch.name is not None:
            label = patch.name.strip()
            steps.append(("name", lambda: record.set_name(label)))
        if checked is not None:
            model = checked
            steps.append(
                ("model", lambda: record.append("model_change", provider=model.provider, modelId=model.id))
            )
        if patch.thinking_level is not None:
            level = patch.thinking_level
            steps.append(
                ("thinkingLevel", lambda: record.append("thinking_level_change", thinkingLevel=level))
            )
        try:
            for field, step in steps:
                step()
                landed.append(field)
            await _flushed(record, landed)
        except (FastagentError, OSError) as exc:
            reason = one_line(getattr(exc, "message", None) or str(exc))
            if not landed:
                return rejected(BOUNDARY_COMMAND_FAILED, f"nothing was written: {reason}")
            engine.hub.publish(session, state_changed(record, engine.settings_of(record)))
            return rejected(PARTIAL_UPDATE, f"wrote {', '.join(landed)}, then failed: {reason}; read state()")
        engine.hub.publish(session, state_changed(record, engine.settings_of(record)))
        return accepted()
    finally:
        await release_lease(release)


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
        release = await engine.store.lease(session)
    except FastagentError as exc:
        return rejected(BOUNDARY_COMMAND_FAILED, one_line(exc.message))
    if release is None:
        return rejected(SESSION_BUSY, BUSY_MESSAGE)
    try:
        existed = await engine.store.delete(session)
    except FastagentError as exc:
        return rejected(BOUNDARY_COMMAND_FAILED, one_line(exc.message))
    finally:
        await release_lease(release)
    if not existed:
        return no_such_session(session)
    engine.hub.end_session(session, "deleted")
    return accepted()
