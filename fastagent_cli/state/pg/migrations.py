"""Versioned migrations: applied at start (every instance runs :func:`migrate`, which is a no-op
once the schema is current) and by ``fastagent db migrate``.

Each pending migration runs in one transaction with its row in ``fastagent_schema``, under a
transaction-level advisory lock, so instances starting together apply it once and a failure
leaves the schema as it was. A database whose schema is newer than this fastagent knows is
refused (start the newer fastagent, or stop the instances running it): an old instance must not
write rows a newer schema reads differently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastagent_cli.errors import DatabaseError
from fastagent_cli.state.pg.schema import MIGRATIONS
from fastagent_cli.state.pg.settings import advisory_key

if TYPE_CHECKING:
    from fastagent_cli.state.pg.driver import Conn

__all__ = ["LATEST_VERSION", "SCHEMA_TABLE", "SchemaStatus", "migrate", "schema_status"]

SCHEMA_TABLE = "fastagent_schema"
LATEST_VERSION = MIGRATIONS[-1][0]
_LOCK = advisory_key("fastagent", "migrations")
_CREATE = f"""
CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (
    version integer PRIMARY KEY,
    description text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    version: int
    """The newest migration applied (0: none)."""
    latest: int
    """The newest migration this fastagent knows."""
    pending: tuple[tuple[int, str], ...]
    """``(version, description)`` of the migrations still to apply."""


async def _versions(conn: Conn) -> set[int]:
    exists = await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", SCHEMA_TABLE)
    if not exists:
        return set()
    return {int(row[0]) for row in await conn.fetch(f"SELECT version FROM {SCHEMA_TABLE}")}


def _check_not_newer(versions: set[int]) -> None:
    newest = max(versions, default=0)
    if newest > LATEST_VERSION:
        raise DatabaseError(
            f"the database schema is at version {newest}, newer than this fastagent knows "
            f"({LATEST_VERSION}): upgrade fastagent before starting it against this database",
            retryable=False,
        )


async def schema_status(conn: Conn) -> SchemaStatus:
    versions = await _versions(conn)
    _check_not_newer(versions)
    pending = tuple((v, d) for v, d, _ in MIGRATIONS if v not in versions)
    return SchemaStatus(max(versions, default=0), LATEST_VERSION, pending)


async def migrate(conn: Conn) -> list[tuple[int, str]]:
    """Apply the pending migrations; returns ``(version, description)`` of those applied now."""
    applied: list[tuple[int, str]] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK)
        await conn.execute(_CREATE)
        versions = await _versions(conn)
        _check_not_newer(versions)
        for version, description, sql in MIGRATIONS:
            if version in versions:
                continue
            await conn.execute(sql)
            await conn.execute(
                f"INSERT INTO {SCHEMA_TABLE} (version, description) VALUES ($1, $2)", version, description
            )
            applied.append((version, description))
    return applied
