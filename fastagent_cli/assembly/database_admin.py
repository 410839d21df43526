"""The state database as ``fastagent db`` administers it, without opening the agent (no model).

* :func:`open_state_database`: where the agent in a directory keeps its state (placement,
  ``.env``, ``fastagent.toml``): a :class:`DatabaseAdmin` when that is the database, UsageError
  when it is files;
* :meth:`DatabaseAdmin.status` / :meth:`DatabaseAdmin.migrate`: the schema version and the
  migrations still to apply, and applying them (what every instance also does at start);
* :meth:`DatabaseAdmin.import_files`: the agent's file session records (pi's layout under the
  state root) copied into the database, each in one transaction, those already there left alone,
  so an import can be run again after a partial one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fastagent_cli.assembly.backend import StateBackend, select_backend
from fastagent_cli.assembly.reading import locate_state
from fastagent_cli.definition.config import load_config
from fastagent_cli.errors import SessionError, UsageError
from fastagent_cli.sessions.store import FileSessionStore
from fastagent_cli.state.paths import resolve_sessions_dir

__all__ = ["DatabaseAdmin", "ImportReport", "SchemaReport", "open_state_database"]


@dataclass(frozen=True, slots=True)
class SchemaReport:
    version: int
    latest: int
    pending: list[tuple[int, str]]
    applied: list[tuple[int, str]] = field(default_factory=list)


@dataclass(slots=True)
class ImportReport:
    imported: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Already in the database (an earlier import, or the same id written there)."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """``(session, why)``: a record that could not be read."""


class DatabaseAdmin:
    def __init__(self, backend: StateBackend, sessions_dir: Path, workspace: Path) -> None:
        self.backend = backend
        self.sessions_dir = sessions_dir
        self.workspace = workspace

    def describe(self) -> str:
        return self.backend.describe()

    async def _connection_status(self, apply: bool) -> SchemaReport:
        from fastagent_cli.state.pg.driver import asyncpg_module
        from fastagent_cli.state.pg.migrations import migrate, schema_status

        settings = self.backend.database_settings
        assert settings is not None
        driver = asyncpg_module()
        try:
            conn = await driver.connect(settings.url, timeout=10)
        except Exception as exc:
            from fastagent_cli.state.pg.database import Database

            raise Database(settings).unreachable(exc) from None
        try:
            applied = await migrate(conn) if apply else []
            status = await schema_status(conn)
        finally:
            await conn.close()
        return SchemaReport(status.version, status.latest, list(status.pending), applied)

    async def status(self) -> SchemaReport:
        return await self._connection_status(apply=False)

    async def migrate(self) -> SchemaReport:
        return await self._connection_status(apply=True)

    async def import_files(self) -> ImportReport:
        """Copy every file session record of the agent into the database."""
        files = FileSessionStore(self.sessions_dir, self.workspace)
        target = self.backend.session_store(self.sessions_dir, self.workspace)
        report = ImportReport()
        try:
            for summary in await files.listing(None):
                data = await files.export(summary.session)
                if data is None:
                    continue
                head, _, body = data.partition(b"\n")
                try:
                    header = json.loads(head)
                except ValueError:
                    report.failed.append((summary.session, "its header line is not JSON"))
                    continue
                if await target.read(summary.session) is not None:
                    report.skipped.append(summary.session)
                    continue
                try:
                    await target.import_record(summary.session, header, body)
                except SessionError as exc:
                    if exc.retryable:
                        raise
                    report.skipped.append(summary.session)  # written meanwhile by an instance
                    continue
                report.imported.append(summary.session)
        finally:
            await self.backend.aclose()
        return report


def open_state_database(
    directory: str | os.PathLike[str] = ".", env: Mapping[str, str] | None = None
) -> DatabaseAdmin:
    """The state database of the agent in ``directory``; UsageError when it keeps files."""
    location = locate_state(directory, env)
    config = load_config(location.placement.config_path)
    backend = select_backend(config, location.agent_dir, location.state_root, env)
    if backend.database_settings is None:
        raise UsageError(
            f'{location.agent_dir} keeps its state in files: set state_backend = "postgres" in '
            "fastagent.toml (and FASTAGENT_DATABASE_URL) to use a database"
        )
    sessions_dir = resolve_sessions_dir(location.state_root, None, location.workspace)
    return DatabaseAdmin(backend, sessions_dir, location.workspace)
