"""The PostgreSQL state backend: what several ``fastagent start`` instances share.

``state_backend = "postgres"`` in ``fastagent.toml`` (or ``FASTAGENT_DATABASE_URL`` set) moves an
agent's machine state into one database: session records and their leases, schedule claims and
wake-ups, channel state, and the live session events every instance relays. Files stay the
default. Importing this package does not import the driver (asyncpg): :class:`Database` loads it
when it first connects.

* :mod:`.settings`: the URL, the namespace, derived keys;
* :mod:`.database`: the pool, the link and the listener of one process;
* :mod:`.link` / :mod:`.link_batch`: leases as advisory locks and the writes fenced by them;
* :mod:`.listener`: ``LISTEN`` with reconnects;
* :mod:`.schema` / :mod:`.migrations`: the versioned schema;
* :mod:`.claims`: schedule claims and wake-ups; :mod:`.channel_state`: channel documents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastagent_cli.state.pg.settings import DATABASE_URL_ENV, DatabaseSettings, redact_url

if TYPE_CHECKING:
    from fastagent_cli.state.pg.database import Database

__all__ = ["DATABASE_URL_ENV", "Database", "DatabaseSettings", "redact_url"]


def __getattr__(name: str) -> Any:
    # Every agent reads the backend settings; only one on the database needs the connection code.
    if name == "Database":
        from fastagent_cli.state.pg.database import Database

        return Database
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
