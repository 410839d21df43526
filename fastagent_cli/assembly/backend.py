"""Where an agent's machine state lives: files under the state root (the default), or the shared
PostgreSQL database that lets several ``fastagent start`` instances serve one agent.

:func:`select_backend` decides from ``fastagent.toml`` and the environment::

    state_backend = "postgres"         # or FASTAGENT_DATABASE_URL set (and state_backend unset)
    [database]
    namespace = "support-bot"          # default: the agent directory's name
    pool_size = 10
    url = "postgresql://..."           # FASTAGENT_DATABASE_URL wins

:class:`StateBackend` then opens every store the hosts use, from one place: the session store,
the schedule claims, the channel state of each channel kind, the usage ledger, and the session
event hub (which, on
the database, relays every instance's events to the others). On files nothing changes: these are
the stores fastagent always had. The database is connected by :meth:`StateBackend.connect`
(``start`` calls it before listening, so an unreachable database fails startup with one line) or
on first use.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fastagent_cli.definition.config import FastagentConfig
from fastagent_cli.engine.hub import EventHub
from fastagent_cli.errors import ConfigError
from fastagent_cli.sessions.store import FileSessionStore, SessionStore
from fastagent_cli.state.channel_state import ChannelStateStore, FileChannelState, channel_home
from fastagent_cli.state.claims import ScheduleClaims, open_schedule_claims
from fastagent_cli.state.pg.settings import (
    DATABASE_URL_ENV,
    DatabaseSettings,
    check_database_url,
    check_namespace,
)
from fastagent_cli.state.run_log import RunHistory, RunLog
from fastagent_cli.state.usage import FileUsageLedger, UsageLedger

if TYPE_CHECKING:
    from fastagent_cli.assembly.shared_hub import SharedEventHub
    from fastagent_cli.state.pg.database import Database

__all__ = ["StateBackend", "select_backend"]


def _default_namespace(agent_dir: Path) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", agent_dir.resolve().name).strip("-._")[:63]
    return cleaned or "agent"


def select_backend(
    config: FastagentConfig, agent_dir: Path, state_root: Path, env: Mapping[str, str] | None = None
) -> StateBackend:
    """The backend ``config`` and the environment ask for; ConfigError for a postgres backend
    without a URL, or a URL that is not one."""
    environ = os.environ if env is None else env
    from_env = environ.get(DATABASE_URL_ENV, "").strip()
    wanted = config.state_backend or ("postgres" if from_env else "files")
    if wanted == "files":
        return StateBackend(state_root, None)
    if from_env:
        url, source = check_database_url(from_env, DATABASE_URL_ENV), DATABASE_URL_ENV
    elif config.database.url:
        url, source = check_database_url(config.database.url, "[database] url"), "fastagent.toml"
    else:
        raise ConfigError(
            f'state_backend = "postgres" needs the database URL: set {DATABASE_URL_ENV}='
            "postgresql://user:password@host:5432/database in .env or the environment"
        )
    namespace = config.database.namespace or _default_namespace(agent_dir)
    check_namespace(namespace, "[database] namespace")
    settings = DatabaseSettings(url, namespace, config.database.pool_size, source)
    return StateBackend(state_root, settings)


@dataclass(eq=False)
class StateBackend:
    """The stores of one agent process (see the module doc)."""

    state_root: Path
    database_settings: DatabaseSettings | None

    def __post_init__(self) -> None:
        self._database: Database | None = None
        self._hub: SharedEventHub | None = None
        self._hub_started = False
        self._ledger: UsageLedger | None = None

    @property
    def kind(self) -> str:
        return "files" if self.database_settings is None else "postgres"

    @property
    def database(self) -> Database | None:
        """The database connections (created on first use, connected by :meth:`connect`)."""
        if self.database_settings is not None and self._database is None:
            from fastagent_cli.state.pg.database import Database

            self._database = Database(self.database_settings)
        return self._database

    @property
    def reachable(self) -> bool:
        """Can this process reach its state store now? Files: always; the database: while its
        link connection is up (it reconnects by itself; ``/health`` says ``degraded`` meanwhile)."""
        db = self._database
        return db is None or db.link.up

    def describe(self) -> str:
        """``files (<state root>)`` or ``postgres <url> (namespace <ns>)``, never a password."""
        settings = self.database_settings
        if settings is None:
            return f"files ({self.state_root})"
        return f"postgres {settings.shown} (namespace {settings.namespace})"

    # --- the stores -----------------------------------------------------------------------------

    def session_store(self, sessions_dir: Path, workspace: Path) -> SessionStore:
        db = self.database
        if db is None:
            return FileSessionStore(sessions_dir, workspace)
        from fastagent_cli.sessions.pg_store import PgSessionStore

        return PgSessionStore(db, workspace)

    def schedule_claims(self) -> ScheduleClaims:
        db = self.database
        if db is None:
            return open_schedule_claims(self.state_root)
        from fastagent_cli.state.pg.claims import PgClaims

        return PgClaims(db)

    def run_log(self) -> RunHistory:
        """The schedule run log (``schedule/runs.jsonl``, or the database's ``fastagent_runs``)."""
        db = self.database
        if db is None:
            return RunLog(self.state_root / "schedule")
        from fastagent_cli.state.pg.runs import PgRunLog

        return PgRunLog(db)

    def channel_state(self, kind: str) -> ChannelStateStore:
        db = self.database
        if db is None:
            return FileChannelState(channel_home(self.state_root, kind))
        from fastagent_cli.state.pg.channel_state import PgChannelState

        return PgChannelState(db, kind)

    def usage_ledger(self) -> UsageLedger:
        """The usage ledger (``<state root>/usage.jsonl``, or ``fastagent_usage``); one per process."""
        if self._ledger is None:
            db = self.database
            if db is None:
                self._ledger = FileUsageLedger(self.state_root)
            else:
                from fastagent_cli.state.pg.usage import PgUsageLedger

                self._ledger = PgUsageLedger(db)
        return self._ledger

    def event_hub(self) -> EventHub:
        """The session event hub (one per agent process)."""
        db = self.database
        if db is None:
            return EventHub()
        if self._hub is None:
            from fastagent_cli.assembly.shared_hub import SharedEventHub

            self._hub = SharedEventHub(db)
        return self._hub

    # --- lifecycle ------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Connect the database and apply its migrations (nothing to do on files);
        DatabaseError when it cannot be used."""
        db = self.database
        if db is None:
            return
        await db.connect()
        if self._hub is not None and not self._hub_started:
            self._hub_started = True
            await self._hub.start()

    async def aclose(self) -> None:
        if self._hub is not None:
            await self._hub.aclose()
        if self._database is not None:
            await self._database.aclose()
