"""An agent's stored sessions, as ``fastagent sessions`` reads and moves them (no model needed).

:func:`open_session_archive` reads only where the agent's state lives (placement, ``.env``, the
state root, ``--sessions-dir``, ``fastagent.toml``'s backend) and opens its session store: the
files (which moves records of the older flat layout into pi's layout on that first open) or, with
``state_backend = "postgres"``, the shared database the instances write. Every method that reads
runs on one event loop, and :meth:`SessionArchive.aclose` closes the database connections on it.
:class:`SessionArchive`:

* :meth:`~SessionArchive.list`: summaries, newest first (``limit=1``: the last session);
* :meth:`~SessionArchive.resolve`: an id as typed (exact, or an unambiguous prefix) -> the id;
* :meth:`~SessionArchive.read`: a :class:`StoredSession`, the record as stored, with its active
  path (never repaired, never written);
* :meth:`~SessionArchive.export_jsonl`: the record's bytes, which the original and pi open as
  they are;
* :meth:`~SessionArchive.usage_totals` / :meth:`~SessionArchive.usage_entries`: the usage ledger
  (what ``sessions list/show`` and ``fastagent usage`` report), :attr:`~SessionArchive.limits`;
* :meth:`~SessionArchive.sources` / :meth:`~SessionArchive.import_record`: records from a file,
  a sessions directory (pi's ``~/.pi/agent/sessions`` too) or another agent directory of either
  implementation (this one's ``.fastagent/sessions``, the TypeScript original's
  ``.state/sessions``), stored here under their own id or a new one.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastagent_cli.assembly.backend import StateBackend, select_backend
from fastagent_cli.assembly.reading import locate_state
from fastagent_cli.definition.config import load_config
from fastagent_cli.definition.sections import LimitsConfig
from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.index import name_key
from fastagent_cli.sessions.layout import OWN_RECORDS_DIR, decode_id, decode_spec_id, workspace_dirname
from fastagent_cli.sessions.listing import SessionSummary
from fastagent_cli.sessions.store import SessionStore
from fastagent_cli.sessions.transfer import ForeignRecord, find_records, prepared
from fastagent_cli.state.paths import STATE_DIRNAME, resolve_sessions_dir
from fastagent_cli.state.usage import UsageEntry, UsageTotals

__all__ = ["ForeignRecord", "SessionArchive", "StoredSession", "open_session_archive", "stored_session_ids"]

AGENT_MARKER = "fastagent.toml"
ORIGINAL_MARKERS = tuple(f"fastagent.config.{ext}" for ext in ("ts", "mts", "cts", "js", "mjs", "cjs"))
"""The TypeScript original's config files: an agent directory of it keeps ``.state/sessions``."""
ORIGINAL_STATE_DIRNAME = ".state"


@dataclass(frozen=True, slots=True)
class StoredSession:
    session: str
    path: Path | None
    header: Mapping[str, Any]
    entries: Sequence[Mapping[str, Any]]
    """Every entry after the header, in file order."""
    active: Sequence[Mapping[str, Any]]
    """The entries from the root to the leaf: the conversation a next turn continues."""
    message_count: int
    name: str | None
    model: str | None
    """``provider/model`` the session last recorded (a ``model_change`` or an answer), if any."""
    thinking: str | None


class SessionArchive:
    def __init__(
        self,
        store: SessionStore,
        sessions_dir: Path,
        workspace: Path,
        backend: StateBackend | None = None,
        limits: LimitsConfig | None = None,
    ) -> None:
        self._store = store
        self.sessions_dir = sessions_dir
        self.workspace = workspace
        self.backend = backend
        self.limits = limits or LimitsConfig()
        """The agent's ``[limits]`` (what ``fastagent usage`` shows as left)."""

    async def usage_totals(self, sessions: Sequence[str]) -> dict[str, UsageTotals]:
        """What each of ``sessions`` used and cost, from the usage ledger (left out: none recorded)."""
        if self.backend is None:
            return {}
        return await self.backend.usage_ledger().session_totals(sessions)

    async def usage_entries(self, since_ms: int | None = None) -> builtins.list[UsageEntry]:
        """The usage ledger's entries (since ``since_ms``), oldest first."""
        if self.backend is None:
            return []
        return await self.backend.usage_ledger().entries(since_ms)

    @property
    def on_database(self) -> bool:
        return self.backend is not None and self.backend.database_settings is not None

    @property
    def records_dir(self) -> Path:
        """Where this workspace's records of the older layout are (``<sessions
        dir>/--<workspace>--``, the original 0.18's) on files; new ones are in ``agent-session``."""
        return self.sessions_dir / workspace_dirname(str(self.workspace))

    @property
    def where(self) -> str:
        """Where the records are, as shown: the sessions directory, or ``the database postgres
        <url> (namespace <ns>)`` (never a password)."""
        if self.backend is not None and self.on_database:
            return f"the database {self.backend.describe()}"
        return str(self.sessions_dir)

    async def list(self, limit: int | None = 30) -> list[SessionSummary]:
        return await self._store.listing(limit)

    async def resolve(self, typed: str) -> str:
        """The stored session ``typed`` names: its id, or the one id it is a prefix of.
        SessionError otherwise."""
        if self._store.location(typed) is not None:
            return typed
        ids = [s.session for s in await self._store.listing(None)]
        if typed in ids:
            return typed
        matches = [session for session in ids if session.startswith(typed)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
            raise SessionError(
                f"{typed!r} is the start of {len(matches)} session ids ({shown}); type more of it"
            )
        raise SessionError(f"no session {typed!r} in {self.where} (`fastagent sessions list` shows the ids)")

    async def read(self, session: str) -> StoredSession | None:
        record = await self._store.read(session)
        if record is None:
            return None
        context = record.context()
        model = f"{context.model[0]}/{context.model[1]}" if context.model else _answered_by(record.entries)
        return StoredSession(
            session=session,
            path=self._store.location(session),
            header=record.header,
            entries=tuple(record.entries),
            active=tuple(record.path()),
            message_count=record.message_count,
            name=record.name,
            model=model,
            thinking=context.thinking_level,
        )

    async def export_jsonl(self, session: str) -> bytes:
        data = await self._store.export(session)
        if data is None:
            raise SessionError(f"no session {session!r} in {self.where}")
        return data

    def other_workspaces(self) -> builtins.list[tuple[str, int]]:
        """Other workspaces' record directories in the sessions directory, with their record counts
        (a moved agent directory leaves its sessions under its old path); none on the database."""
        if self.on_database:
            return []
        try:
            with os.scandir(self.sessions_dir) as entries:
                dirs = [
                    e for e in entries if e.is_dir() and e.name.startswith("--") and e.name.endswith("--")
                ]
        except OSError:
            return []
        counts = [(e.name, _count(Path(e.path))) for e in dirs if e.name != self.records_dir.name]
        return sorted((name, count) for name, count in counts if count)

    async def count(self) -> int:
        """How many records this workspace has."""
        return len(await self._store.listing(None))

    async def aclose(self) -> None:
        """Close the database connections (nothing to do on files)."""
        if self.backend is not None:
            await self.backend.aclose()

    # --- import -----------------------------------------------------------------------------------

    def sources(self, source: Path) -> builtins.list[ForeignRecord]:
        """The records in ``source`` (a file, a sessions directory, or an agent directory of
        either implementation: its sessions directory), newest first."""
        sessions = agent_sessions_dir(source)
        if sessions is not None:
            if not sessions.is_dir():
                return []
            source = sessions
        return find_records(source)

    async def import_record(
        self, record: ForeignRecord, session: str | None = None
    ) -> tuple[str, Path | None]:
        """Store ``record`` here under ``session`` (default: its own id); SessionError when that
        id has a record here already. Returns the id and the new file."""
        target = record.session if session is None else session
        existing = self._store.location(target)
        if existing is not None and existing.resolve() == record.path.resolve():
            raise SessionError(f"{record.path} is this agent's session {target!r} already")
        if existing is not None:
            raise SessionError(
                f"session {target!r} exists here already ({existing}); "
                "import it under another id with --as ID or --new-id"
            )
        if self.on_database and await self._store.read(target) is not None:
            raise SessionError(
                f"session {target!r} exists here already (in {self.where}); "
                "import it under another id with --as ID or --new-id"
            )
        header, body = prepared(record, target, str(self.workspace))
        return target, await self._store.import_record(target, header, body)


def agent_sessions_dir(source: Path) -> Path | None:
    """The default sessions directory of the agent directory ``source`` (this implementation's
    ``.fastagent/sessions``, the original's ``.state/sessions``); ``None`` when it is not one."""
    if not source.is_dir():
        return None
    if (source / AGENT_MARKER).is_file():
        return source / STATE_DIRNAME / "sessions"
    if any((source / marker).is_file() for marker in ORIGINAL_MARKERS):
        return source / ORIGINAL_STATE_DIRNAME / "sessions"
    return None


def _count(directory: Path) -> int:
    try:
        with os.scandir(directory) as files:
            return sum(1 for f in files if f.name.endswith(".jsonl") and not f.name.startswith("."))
    except OSError:
        return 0


def _answered_by(entries: Sequence[Mapping[str, Any]]) -> str | None:
    for entry in reversed(entries):
        message = entry.get("message")
        if (
            entry.get("type") == "message"
            and isinstance(message, dict)
            and message.get("role") == "assistant"
        ):
            provider, model = message.get("provider"), message.get("model")
            if isinstance(provider, str) and isinstance(model, str):
                return f"{provider}/{model}"
    return None


def stored_session_ids(directory: str | os.PathLike[str] = ".", sessions_dir: str | None = None) -> list[str]:
    """The ids of the agent's stored sessions, from the file names alone: nothing is opened,
    written or moved (shell completion; the spec layout's directory is shared by every
    workspace, so it may offer another one's too). Ids too long for a file name are left out."""
    location = locate_state(directory)
    root = resolve_sessions_dir(location.state_root, sessions_dir, location.workspace)
    ids: set[str] = set()
    for layout, decode in (
        (workspace_dirname(str(location.workspace)), decode_id),
        (OWN_RECORDS_DIR, decode_spec_id),
    ):
        try:
            names = os.listdir(root / layout)
        except OSError:
            continue
        keys = [key for key in map(name_key, names) if key is not None and "~" not in key]
        ids.update(decode(key) or key for key in keys)
    return sorted(ids)


def open_session_archive(
    directory: str | os.PathLike[str] = ".",
    *,
    sessions_dir: str | None = None,
    env: Mapping[str, str] | None = None,
) -> SessionArchive:
    """The sessions of the agent in ``directory`` (``env`` replaces the process environment), in
    the store its backend names (ConfigError for database settings that are wrong; nothing is
    connected yet)."""
    location = locate_state(directory, env)
    root = resolve_sessions_dir(location.state_root, sessions_dir, location.workspace)
    config = load_config(location.placement.config_path)
    backend = select_backend(config, location.agent_dir, location.state_root, env)
    store = backend.session_store(root, location.workspace)
    return SessionArchive(store, root, location.workspace, backend, config.limits)
