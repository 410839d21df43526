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
* ``connect_timeout_s`` bounds opening a connection; ``read_timeout_s`` bounds every wait for
  bytes of an answer (a model that goes silent that long is treated as gone).

The limits apply per provider origin (scheme, host, port), and the pool behind them is
:class:`~fastagent_cli.models.http_transport.PooledTransport`: O(1) per request whatever the number
of requests in flight, waiting requests served in arrival order. When the environment names a
proxy (``HTTPS_PROXY``, ``ALL_PROXY``, ...), the client is httpx's own, which honours it, with
the same limits and timeouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.request import getproxies

import httpx

from fastagent_cli.models.http_transport import PooledTransport

__all__ = ["DEFAULT_POOL", "PoolLimits", "new_http_client"]


@dataclass(frozen=True, slots=True)
class PoolLimits:
    max_connections: int = 256
    max_keepalive: int = 256
    keepalive_expiry_s: float = 15.0
    pool_timeout_s: float = 10.0
    connect_timeout_s: float = 15.0
    read_timeout_s: float = 300.0
    write_timeout_s: float = 60.0
    coalesce_s: float = 0.05

    def limits(self) -> httpx.Limits:
        return httpx.Limits(
            max_connections=self.max_connections,
            max_keepalive_connections=self.max_keepalive,
            keepalive_expiry=self.keepalive_expiry_s,
        )

    def transport(self) -> PooledTransport:
        return PooledTransport(
            max_connections=self.max_connections,
            max_keepalive=self.max_keepalive,
            keepalive_expiry=self.keepalive_expiry_s,
        )

    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(
            connect=self.connect_timeout_s,
            read=self.read_timeout_s,
            write=self.write_timeout_s,
            pool=self.pool_timeout_s,
        )


DEFAULT_POOL = PoolLimits()


def new_http_client(pool: PoolLimits = DEFAULT_POOL) -> httpx.AsyncClient:
    """The ``httpx.AsyncClient`` a wire client owns: these limits, these timeouts, this pool."""
    if getproxies():  # httpx reads proxies from the environment only for a client of its own
        return httpx.AsyncClient(limits=pool.limits(), timeout=pool.timeout())
    return httpx.AsyncClient(transport=pool.transport(), timeout=pool.timeout())
