"""The PostgreSQL driver (asyncpg), imported only when the database backend is on, and how its
errors read.

asyncpg is an optional dependency (``pip install 'fastagent-cli[postgres]'``; the release binary
carries it): a process on the file backend never imports it, so ``fastagent`` starts as fast
with or without it.
"""

from __future__ import annotations

import asyncio
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from fastagent_cli.errors import ConfigError, one_line

if TYPE_CHECKING:
    from asyncpg import Connection
    from asyncpg.pool import PoolConnectionProxy

    Conn: TypeAlias = Connection[Any] | PoolConnectionProxy[Any]
    """A connection, pooled or not (what the stores' queries run on)."""

__all__ = ["INSTALL_HINT", "Connector", "asyncpg_module", "is_connection_loss", "reason"]

INSTALL_HINT = "pip install 'fastagent-cli[postgres]'"


class Connector(Protocol):
    """What the link and the listener need of the database: this instance's id and a way to open
    a connection of their own (:class:`~fastagent_cli.state.pg.database.Database`)."""

    instance: str

    async def open_connection(self, role: str, **settings: str) -> Connection[Any]: ...


def asyncpg_module() -> ModuleType:
    """``asyncpg``; ConfigError saying how to install it when it is missing."""
    try:
        import asyncpg
    except ImportError:
        raise ConfigError(
            f'state_backend = "postgres" needs the asyncpg driver, which is not installed: {INSTALL_HINT}'
        ) from None
    return asyncpg


def is_connection_loss(exc: BaseException) -> bool:
    """Is ``exc`` the connection going away (the server, the network, a closed connection), as
    opposed to the server refusing a statement?"""
    if isinstance(exc, OSError | asyncio.TimeoutError | ConnectionError):
        return True
    try:
        import asyncpg
    except ImportError:  # pragma: no cover - only reached with the driver loaded
        return False
    if isinstance(exc, asyncpg.QueryCanceledError):
        return False  # a statement timeout: the connection is fine
    return isinstance(
        exc,
        asyncpg.PostgresConnectionError
        | asyncpg.exceptions.OperatorInterventionError
        | asyncpg.InterfaceError
        | asyncpg.exceptions.TooManyConnectionsError,
    )


def reason(exc: BaseException) -> str:
    """A short, one-line cause: ``connection refused``, ``password authentication failed for user
    "x"``, ``timed out``..."""
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    text: Any = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return one_line(str(text), 300)
