"""What names the shared database: its URL, the agent's namespace in it, and the keys derived
from them (advisory lock keys, notification channel names).

One database may hold several agents: every row carries the agent's *namespace* (``[database]
namespace`` in ``fastagent.toml``, by default the agent directory's name), so the instances of one
agent must agree on it and two agents must not share it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from fastagent_cli.errors import ConfigError

__all__ = [
    "DATABASE_URL_ENV",
    "DEFAULT_POOL_SIZE",
    "DatabaseSettings",
    "advisory_key",
    "check_database_url",
    "check_namespace",
    "redact_url",
]

DATABASE_URL_ENV = "FASTAGENT_DATABASE_URL"
DEFAULT_POOL_SIZE = 10
_SCHEMES = ("postgres", "postgresql")
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


@dataclass(frozen=True, slots=True)
class DatabaseSettings:
    """Where the agent's shared state lives."""

    url: str
    namespace: str
    pool_size: int = DEFAULT_POOL_SIZE
    source: str = DATABASE_URL_ENV
    """What set the URL (for messages): the variable or ``fastagent.toml``."""

    @property
    def shown(self) -> str:
        """The URL without its password, for messages and logs."""
        return redact_url(self.url)

    def channel(self, kind: str) -> str:
        """The notification channel of ``kind`` for this namespace (at most 63 bytes)."""
        digest = hashlib.blake2b(self.namespace.encode("utf-8"), digest_size=6).hexdigest()
        return f"fastagent.{digest}.{kind}"


def redact_url(url: str) -> str:
    """``postgresql://user@host:5432/db``: the password (and any query string) left out."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<an unparsable database URL>"
    user = f"{parts.username}@" if parts.username else ""
    if ":" in host:
        host = f"[{host}]"
    return urlunsplit((parts.scheme, f"{user}{host}{port}", parts.path, "", ""))


def check_database_url(url: str, setting: str) -> str:
    """``url`` when it is a PostgreSQL URL; ConfigError naming ``setting`` otherwise."""
    value = url.strip()
    try:
        parts = urlsplit(value)
        _ = parts.port  # an out-of-range or non-numeric port raises here
    except ValueError as exc:
        raise ConfigError(f"{setting}: not a database URL ({exc})") from None
    if parts.scheme not in _SCHEMES:
        shown = f"{parts.scheme}://" if parts.scheme else "no scheme"
        raise ConfigError(
            f"{setting}: expected a postgresql://user:password@host:5432/database URL, not {shown}"
        )
    return value


def check_namespace(value: str, setting: str) -> str:
    if not _NAMESPACE.fullmatch(value):
        raise ConfigError(
            f"{setting}: {value!r} is not a namespace (1-63 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit)"
        )
    return value


def advisory_key(*parts: str) -> int:
    """A signed 64-bit advisory lock key for ``parts`` (namespace, kind, id...)."""
    digest = hashlib.blake2b("\x00".join(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)
