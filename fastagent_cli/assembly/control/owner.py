"""The owner's face on the session hub (:attr:`LocalSessionControl.owner
<fastagent_cli.assembly.control.hub.LocalSessionControl.owner>`, ``opened.sessions``).

What the agent's owner (chat, ``invoke``) does with its sessions that the control plane's
:class:`~fastagent_cli.control.Session` does not say, on the hub and through its write path:

* :meth:`SessionOwner.read` returns a :class:`SessionView` of a record as stored, never repaired
  or written, with its settings resolved the way the engine runs them;
* :meth:`SessionOwner.list` lists the stored sessions, newest first;
* :meth:`SessionOwner.update`, :meth:`SessionOwner.pin_model` and :meth:`SessionOwner.carry` write
  per-session settings, validated as a whole (with the owner's messages: a ``:level`` suffix,
  the levels a model supports) before anything is written, then committed by the hub's one write
  (:func:`~fastagent_cli.assembly.control.writes.write_settings`: the same entries, lease, commit
  and ``state_changed`` as a ``/control`` update). The owner's writes do not depend on
  ``session_control``: that switch is about clients of the control plane;
* :meth:`SessionOwner.compact` starts a manual compaction (chat's ``/compact``).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastagent_cli.assembly.control.writes import (
    delete_session,
    fork_session,
    settings_entries,
    update_session,
    write_settings,
)
from fastagent_cli.control import ActionResult, SessionUpdate
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.settings import SessionSettings, resolve_session_settings
from fastagent_cli.errors import CredentialError, FastagentError, SessionError, UsageError
from fastagent_cli.messages import Message
from fastagent_cli.models.credentials import missing_hint
from fastagent_cli.models.registry import parse_spec
from fastagent_cli.models.thinking import clamp_thinking
from fastagent_cli.sessions.listing import SessionSummary
from fastagent_cli.sessions.record import SessionRecord

__all__ = ["SessionOwner", "SessionSettings", "SessionSummary", "SessionView"]


@dataclass(frozen=True, slots=True)
class SessionView:
    """One session as stored (read-only)."""

    session: str
    path: Path | None
    entries: Sequence[Mapping[str, Any]]
    """Every entry after the header, in file order (pi v3)."""
    messages: Sequence[Message]
    """What the next request would carry: the active path, after the latest compaction."""
    message_count: int
    leaf_id: str | None
    settings: SessionSettings


class SessionOwner:
    def __init__(self, engine: EngineAgent) -> None:
        self._engine = engine
        self._store = engine.store
        self._models = engine.config.models
        self._default_thinking = engine.config.thinking_level

    # --- reading --------------------------------------------------------------------------------

    def location(self, session: str) -> Path | None:
        """Where the record of ``session`` lives (``None`` in memory)."""
        return self._store.location(session)

    async def exists(self, session: str) -> bool:
        """Whether ``session`` has a record (a file store answers from its index; a database
        store, which has no locations, by reading it)."""
        if self._store.location(session) is not None:
            return True
        return await self._store.read(session) is not None

    def defaults(self) -> SessionSettings:
        """The settings of a session with no overrides (the agent's model and thinking level)."""
        return resolve_session_settings(None, self._models, self._default_thinking)

    async def read(self, session: str) -> SessionView | None:
        """``None`` when the session does not exist; SessionError when its record is unreadable."""
        record = await self._store.read(session)
        if record is None:
            return None
        context = record.context()
        return SessionView(
            session=session,
            path=self._store.location(session),
            entries=tuple(record.entries),
            messages=tuple(context.messages),
            message_count=record.message_count,
            leaf_id=record.leaf_id,
            settings=resolve_session_settings(context, self._models, self._default_thinking),
        )

    def list_sessions(self, limit: int | None = 30) -> builtins.list[SessionSummary]:
        """Stored sessions, newest first (blocking IO: from the loop, use :meth:`list`)."""
        return self._store.list_sessions(limit)

    async def list(self, limit: int | None = 30) -> builtins.list[SessionSummary]:
        return await self._store.listing(limit)

    def model_specs(self) -> builtins.list[str]:
        """The specs a session's model may be set to."""
        return self._models.specs()

    def key_warning(self, settings: SessionSettings) -> str | None:
        """``no API key for <provider> (set ..., or run ...)`` when turns on these settings would
        be refused for want of a key."""
        try:
            if not self._models.credential(settings.model).missing:
                return None
        except CredentialError as exc:  # a broken or still running apiKey command
            return exc.message
        return f"no API key for {settings.model.provider} ({missing_hint(settings.model)})"

    # --- writing --------------------------------------------------------------------------------

    def plan(
        self, base: SessionSettings, *, model: str | None = None, thinking: str | None = None
    ) -> tuple[builtins.list[tuple[str, dict[str, Any]]], SessionSettings]:
        """Validate a change against ``base`` and return the entries it writes and the result.

        ``model`` may carry a ``:thinking`` suffix (clamped to the model, like a configured level);
        ``thinking`` must be one the resulting model supports (UsageError naming them otherwise);
        an unknown model is a ModelError. Nothing is written.
        """
        entries: builtins.list[tuple[str, dict[str, Any]]] = []
        result = base
        if model is not None:
            info = self._models.resolve(model)
            result = SessionSettings(info, result.requested_thinking)
            _, suffix = parse_spec(model.strip())
            level = clamp_thinking(suffix, info) if suffix is not None and thinking is None else None
            entries += settings_entries(info, level)
            if level is not None:
                result = SessionSettings(info, level)
        if thinking is not None:
            levels = result.available_thinking
            chosen = next((lv for lv in levels if lv == thinking), None)
            if chosen is None:
                raise UsageError(
                    f"{result.spec} supports thinking levels: {', '.join(levels)} (not {thinking!r})"
                )
            entries += settings_entries(None, chosen)
            result = SessionSettings(result.model, chosen)
        return entries, result

    async def update(
        self, session: str, *, model: str | None = None, thinking: str | None = None, create: bool = False
    ) -> SessionSettings:
        """Set the session's model and/or thinking level (validated as in :meth:`plan`, then one
        append of whole entries) and return its settings. ``create``: a session that does not exist
        yet is created (a chat writing settings before its first turn); otherwise SessionError."""

        def decide(
            record: SessionRecord,
        ) -> tuple[builtins.list[tuple[str, dict[str, Any]]], SessionSettings]:
            return self.plan(self._engine.settings_of(record), model=model, thinking=thinking)

        return await write_settings(self._engine, session, decide, create=create)

    async def pin_model(self, session: str, spec: str) -> SessionSettings:
        """An explicit model choice for ``session`` (``--model`` on ``invoke`` / ``chat``): it runs
        the next turn and is recorded as the session's model (``model_change``, and
        ``thinking_level_change`` for a ``:level`` suffix), unless the session records it already.
        The session is created if new, unless the model cannot run (no key, no script): then nothing
        is written and the turn reports why. Busy: SessionError at once. Returns its settings."""
        if await self._store.read(session) is None and not self._runnable(spec):
            return self.plan(self.defaults(), model=spec)[1]

        def decide(
            record: SessionRecord,
        ) -> tuple[builtins.list[tuple[str, dict[str, Any]]], SessionSettings]:
            context = record.context()
            current = resolve_session_settings(context, self._models, self._default_thinking)
            planned, result = self.plan(current, model=spec)
            recorded = {"model_change": context.model, "thinking_level_change": context.thinking_level}
            entries = [
                (kind, fields)
                for kind, fields in planned
                if recorded[kind]
                != (
                    (fields["provider"], fields["modelId"])
                    if kind == "model_change"
                    else fields["thinkingLevel"]
                )
            ]
            return entries, result

        return await write_settings(self._engine, session, decide, create=True)

    def _runnable(self, spec: str) -> bool:
        """``spec`` has what a turn checks before it writes: a key when one is needed, a client
        (a scripted model's script)."""
        try:
            model = self._models.resolve(spec)
            if self._models.credential(model).missing:
                return False
            self._models.client_for(model)
        except FastagentError:
            return False
        return True

    async def carry(self, session: str, settings: SessionSettings) -> None:
        """Write ``settings`` into ``session`` (created if new) where they differ from the agent's
        defaults: how a new chat session keeps the model and thinking level chosen before."""
        defaults = self.defaults()
        entries = settings_entries(
            settings.model if settings.spec != defaults.spec else None,
            settings.requested_thinking
            if settings.requested_thinking != defaults.requested_thinking
            else None,
        )
        if entries:
            await write_settings(self._engine, session, lambda _record: (entries, settings), create=True)

    async def seed(self, session: str, messages: Sequence[Message]) -> None:
        """Create ``session`` with ``messages`` as its history, in one write under its lease: a
        client that sends the whole conversation each time (the OpenAI-compatible face) gets the
        model to see exactly that history. SessionError when the session exists already,
        SessionBusyError while another writer holds it."""
        async with self._store.leased(session):
            if await self._store.read(session) is not None:
                raise SessionError(f'session "{session}" exists already: it cannot be seeded')
            record = await self._store.open_or_create(session)
            if messages:
                record.append_many([("message", {"message": message}) for message in messages])
                await record.flush()

    async def discard(self, session: str) -> ActionResult:
        """Delete ``session`` (between runs, under its lease): what a one-off session is once its
        turn settled. ``session_busy`` / ``no_such_session`` as the hub's ``delete``."""
        return await delete_session(self._engine, session)

    async def fork(self, source: str, at: str, into: str) -> ActionResult:
        """Copy ``source``'s conversation up to entry ``at`` into the new session ``into`` (the
        hub's ``fork``, whatever ``session_control`` says): a client continuing from an earlier
        point of a conversation that moved on."""
        return await fork_session(self._engine, source, at, into)

    async def navigate(self, session: str, leaf: str) -> ActionResult:
        """Move ``session``'s leaf to entry ``leaf`` (the hub's ``update(leafEntryId)``, whatever
        ``session_control`` says): chat's ``/navigate``; the next message branches from it."""
        return await update_session(self._engine, session, SessionUpdate(leaf_entry_id=leaf))

    async def compact(self, session: str, instructions: str | None = None) -> ActionResult:
        """Start compacting ``session``: accepted fast, the outcome arrives on the session's events
        as ``compaction_finished``; ``nothing_to_compact``, ``no_such_session`` or
        ``session_busy`` otherwise."""
        return await self._engine.compact(session, instructions)
