"""The schedule run log in the shared database (``fastagent_runs``, migration 2).

One row per scheduled or woken turn, the record as the file backend writes it (``body``: its JSON,
see :mod:`~fastagent_cli.state.run_log`), every instance of a namespace writing to the same log,
so ``schedule history`` shows the runs whichever instance ran them. A write is one ``INSERT`` on a
pooled connection (asyncpg: the loop never waits on the socket), which also drops the rows of
that name beyond the newest :data:`KEEP_PER_NAME`, as the file backend rotates its file: history
stays readable without growing forever. A database that cannot be reached raises
:class:`~fastagent_cli.state.run_log.RunLogUnavailable` (an ``OSError``, as a disk that refuses).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from fastagent_cli.errors import DatabaseError
from fastagent_cli.state.run_log import RunLogUnavailable

if TYPE_CHECKING:
    from fastagent_cli.state.pg.database import Database
    from fastagent_cli.state.pg.driver import Conn

__all__ = ["KEEP_PER_NAME", "PgRunLog"]

T = TypeVar("T")

KEEP_PER_NAME = 10_000
"""Runs kept per schedule name (and for ``wake``); older ones are dropped as new ones land."""

_WRITE = """
WITH added AS (INSERT INTO fastagent_runs (namespace, name, body) VALUES ($1, $2, $3))
DELETE FROM fastagent_runs WHERE namespace = $1 AND name = $2 AND id <= (
    SELECT id FROM fastagent_runs WHERE namespace = $1 AND name = $2
    ORDER BY id DESC OFFSET $4::integer - 1 LIMIT 1
)
"""
"""The insert, and (in the statement's snapshot, which holds the rows before it) every row of the
name but the newest ``keep - 1``: ``keep`` rows after it."""
_READ_ALL = "SELECT body FROM fastagent_runs WHERE namespace = $1 ORDER BY id"
_READ_NAME = "SELECT body FROM fastagent_runs WHERE namespace = $1 AND name = $2 ORDER BY id"


class PgRunLog:
    """:class:`~fastagent_cli.state.run_log.RunHistory` on the shared database."""

    def __init__(self, db: Database, keep: int = KEEP_PER_NAME) -> None:
        self.db = db
        self.namespace = db.namespace
        self.keep = keep

    @property
    def where(self) -> str:
        settings = self.db.settings
        return f"the database postgres {settings.shown} (namespace {settings.namespace})"

    async def _run(self, what: str, work: Callable[[Conn], Awaitable[T]]) -> T:
        try:
            return await self.db.run(what, work)
        except DatabaseError as exc:
            raise RunLogUnavailable(exc.message) from exc

    async def write(self, record: dict[str, Any]) -> None:
        body = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        name = str(record.get("name", ""))
        await self._run(
            "record the schedule run",
            lambda conn: conn.execute(_WRITE, self.namespace, name, body, self.keep),
        )

    async def read(self, name: str | None = None) -> list[dict[str, Any]]:
        if name is None:
            rows = await self._run("read the schedule runs", lambda c: c.fetch(_READ_ALL, self.namespace))
        else:
            rows = await self._run(
                "read the schedule runs", lambda c: c.fetch(_READ_NAME, self.namespace, name)
            )
        out: list[dict[str, Any]] = []
        for row in rows:
            try:
                record = json.loads(row["body"])
            except ValueError:
                continue
            if isinstance(record, dict):
                out.append(record)
        return out
