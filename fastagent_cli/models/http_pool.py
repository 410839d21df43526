"""The model HTTP connection pool: every limit and timeout of the wire clients' ``httpx`` client,
in one place so they can be tuned together.

* ``max_connections``: model requests in flight at once per provider origin (one streaming request
  holds one HTTP/1.1 connection for its whole answer). A request beyond it waits for a free
  connection for at most ``pool_timeout_s``, then fails as a *retryable* provider error (the turn
  retries with backoff and ends ``failed{retryable: true}``), and the pool being full is logged;
  it never waits silently forever.
* ``max_keepalive`` idle connections are kept for ``keepalive_expiry_s`` so sequential turns reuse
  them (no TCP/TLS handshake per turn).
* ``coalesce_s``: once an answer's first delta is out, its stream is read at most this often;
  what arrives meanwhile is handled as one batch (and leaves as one SSE write to the client).
  50 ms, 20 updates a second: smooth to a reader, and several tokens per read at the speed of
  fast models. Per-read costs (a loop wake-up, the hand-overs between the model's reader, the
  turn and the client's writer, a socket write) dominate a token's cost, so this is the knob
  that sets CPU per token; ``0`` reads every token as it comes. The first delta of an answer is
  never held back, and an answer that is only tool calls is never paced.
* ``connect_timeout_s`` bounds opening a connection (TCP, a proxy's ``CONNECT``, the TLS
  handshake); ``first_byte_timeout_s`` bounds the wait for the answer to start once the request
  is sent (a server that accepts the connection and never answers); ``read_timeout_s`` bounds
  every wait between two chunks of the answer after that (a model that goes silent that long is
  treated as gone). ``[engine]`` sets them (``connect_timeout``, ``first_byte_timeout``,
  ``chunk_timeout``), a provider's ``timeouts`` in ``models.json`` overrides them per request.

The limits apply per provider origin (scheme, host, port), and the pool behind them is
:class:`~fastagent_cli.models.http_transport.PooledTransport`: O(1) per request whatever the number
of requests in flight, waiting requests served in arrival order. It serves every provider, also
through a proxy named in the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``,
``NO_PROXY``; see :mod:`~fastagent_cli.models.http_proxy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # httpx is imported when a client is built, not with the settings
    import httpx

    from fastagent_cli.models.http_transport import PooledTransport

__all__ = ["DEFAULT_POOL", "PoolLimits", "model_pool", "new_http_client"]


class EngineTimeouts(Protocol):
    """What :func:`model_pool` reads of ``[engine]``."""

    @property
    def connect_timeout(self) -> float: ...
    @property
    def first_byte_timeout(self) -> float: ...
    @property
    def chunk_timeout(self) -> float: ...


@dataclass(frozen=True, slots=True)
class PoolLimits:
    max_connections: int = 256
    max_keepalive: int = 256
    keepalive_expiry_s: float = 15.0
    pool_timeout_s: float = 10.0
    connect_timeout_s: float = 15.0
    first_byte_timeout_s: float = 30.0
    read_timeout_s: float = 300.0
    """Between two chunks of an answer."""
    write_timeout_s: float = 60.0
    coalesce_s: float = 0.05

    def limits(self) -> httpx.Limits:
        import httpx

        return httpx.Limits(
            max_connections=self.max_connections,
            max_keepalive_connections=self.max_keepalive,
            keepalive_expiry=self.keepalive_expiry_s,
        )

    def transport(self) -> PooledTransport:
        from fastagent_cli.models.http_transport import PooledTransport

        return PooledTransport(
            max_connections=self.max_connections,
            max_keepalive=self.max_keepalive,
            keepalive_expiry=self.keepalive_expiry_s,
        )

    def timeout(self) -> httpx.Timeout:
        import httpx

        return httpx.Timeout(
            connect=self.connect_timeout_s,
            read=self.read_timeout_s,
            write=self.write_timeout_s,
            pool=self.pool_timeout_s,
        )

    def timeouts(self, overrides: Mapping[str, float] | None = None) -> dict[str, float]:
        """A request's timeouts as the transport reads them (``connect``, ``first_byte``,
        ``read`` = between chunks, ``write``, ``pool``), a provider's ``overrides`` applied."""
        out = {
            "connect": self.connect_timeout_s,
            "first_byte": self.first_byte_timeout_s,
            "read": self.read_timeout_s,
            "write": self.write_timeout_s,
            "pool": self.pool_timeout_s,
        }
        if overrides:
            for key, value in overrides.items():
                out["read" if key == "between_chunks" else key] = value
        return out


DEFAULT_POOL = PoolLimits()


def new_http_client(
    pool: PoolLimits = DEFAULT_POOL, transport: PooledTransport | None = None
) -> httpx.AsyncClient:
    """The ``httpx.AsyncClient`` a wire client owns: these limits, these timeouts, this pool
    (with or without a proxy in the environment: the transport reads it); ``transport``: the
    pool, when the caller keeps it to send through it directly."""
    import httpx

    pooled = transport if transport is not None else pool.transport()
    return httpx.AsyncClient(transport=pooled, timeout=pool.timeout(), trust_env=False)


def model_pool(engine: EngineTimeouts) -> PoolLimits:
    """The pool with ``[engine]``'s ``connect_timeout``, ``first_byte_timeout`` and ``chunk_timeout``."""
    return PoolLimits(
        connect_timeout_s=engine.connect_timeout,
        first_byte_timeout_s=engine.first_byte_timeout,
        read_timeout_s=engine.chunk_timeout,
    )
