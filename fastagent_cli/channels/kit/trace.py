"""The caller's W3C trace context on a webhook delivery, kept with the turn it becomes.

A channel turn runs after the delivery is acknowledged (queued behind its session, or replayed
after a restart), so the ``traceparent`` header of the request cannot simply be the parent of the
span that is current when the turn runs. Instead:

1. the webhook handler runs inside :func:`receiving` (the kit's
   :class:`~fastagent_cli.channels.kit.routes.WebhookIngress` does this for every platform), which
   makes the request's valid ``traceparent`` the *delivery trace* of what the handler does;
2. :meth:`~fastagent_cli.channels.kit.turn_store.TurnStore.add` stamps it into the record it
   persists (``traceparent``), so the journal keeps it across a restart and another instance
   adopting the turn sees it too;
3. :func:`~fastagent_cli.channels.kit.lifecycle.run_durable_turn` opens the turn's root span with
   it: the turn continues the caller's trace, and so does the model request's ``traceparent``.

With telemetry off nothing is read or stored. A header that is not a valid version-00
``traceparent`` is ignored (a new trace), as the W3C spec asks.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from fastagent_cli import telemetry

__all__ = ["delivery_trace", "incoming_traceparent", "receiving"]

_DELIVERY: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "fastagent_delivery_trace", default=None
)


def incoming_traceparent(headers: Mapping[str, str]) -> str | None:
    """The request's ``traceparent`` (lower case) when telemetry is on and it is valid, else ``None``."""
    if not telemetry.enabled():
        return None
    header = headers.get("traceparent")
    if telemetry.parse_traceparent(header) is None:
        return None
    assert header is not None
    return header.strip().lower()


@contextmanager
def receiving(headers: Mapping[str, str]) -> Iterator[str | None]:
    """Make the request's trace context the delivery trace of the block (yields it)."""
    token = _DELIVERY.set(incoming_traceparent(headers))
    try:
        yield _DELIVERY.get()
    finally:
        _DELIVERY.reset(token)


def delivery_trace() -> str | None:
    """The delivery trace of the webhook request being handled, if it came with one."""
    return _DELIVERY.get()
