"""What a first-party channel returns when it is mounted: its routes, plus a lifecycle.

A route channel is ``channel(ctx) -> {route key: handler}``. A stateful channel also has work to do
before it serves (load its state, replay unfinished turns, look itself up on the platform) and
after (stop its background turns). :class:`ChannelRoutes` is that dict with two optional
coroutines the host awaits: :meth:`~ChannelRoutes.start` once, before listening (a failure there is
a fatal channel error, like a broken file), and :meth:`~ChannelRoutes.aclose` on shutdown.

The checks every webhook shares live here too: a presented secret compared in constant time
(:func:`secret_matches`) and a signed request's timestamp within :data:`MAX_SIGNATURE_AGE_S` of now
(:func:`timestamp_fresh`: a replayed capture is refused), and the acknowledgement that comes only once
what a delivery causes is durable (:func:`acknowledge_when_durable`).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from aiohttp import web

from fastagent_cli.channels.kit.journal import StateWriteError
from fastagent_cli.serving.body import text_response

__all__ = [
    "MAX_SIGNATURE_AGE_S",
    "ChannelRoutes",
    "Route",
    "acknowledge_when_durable",
    "decide_route",
    "secret_matches",
    "timestamp_fresh",
]

log = logging.getLogger("fastagent.channel")

R = TypeVar("R")

Route = Callable[[Mapping[str, Any]], Any]
"""A channel's ``route(payload)``: the platform's route type, a dict of its fields, or ``None``."""

MAX_SIGNATURE_AGE_S = 5 * 60
"""How far a signed request's timestamp may be from now (Slack's and Feishu/Lark's window)."""

_TIMESTAMP = re.compile(r"^\d{1,12}$")


class ChannelRoutes(dict[str, Any]):
    def __init__(
        self,
        routes: dict[str, Any],
        *,
        start: Callable[[], Awaitable[None]] | None = None,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(routes)
        self._start = start
        self._close = close

    async def start(self) -> None:
        if self._start is not None:
            await self._start()

    async def aclose(self) -> None:
        if self._close is not None:
            await self._close()


def secret_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a presented secret (a missing one never matches)."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


def timestamp_fresh(timestamp: str | None, now: float | None = None) -> bool:
    """Is ``timestamp`` (Unix seconds, as a platform's header sends it) within
    :data:`MAX_SIGNATURE_AGE_S` of ``now``? A missing or malformed one is not."""
    if not timestamp or not _TIMESTAMP.match(timestamp):
        return False
    current = time.time() if now is None else now
    return abs(int(current) - int(timestamp)) <= MAX_SIGNATURE_AGE_S


async def acknowledge_when_durable(
    accepting: Awaitable[None], *, label: str, what: str, delivery: object, again: str
) -> web.Response:
    """``200`` once ``accepting`` (shielded: a client that hangs up does not cut it short) has made
    the delivery's effects durable; ``500 "cannot persist the <what>"`` when a state write failed,
    so the platform delivers it again (``again`` says how, in the log line)."""
    try:
        await asyncio.shield(accepting)
    except StateWriteError as exc:
        log.error("%s could not persist %s %s, so %s: %s", label, what, delivery, again, exc)
        return text_response(f"cannot persist the {what}\n", 500)
    return web.Response(status=200)


def decide_route(
    route: Callable[[Any], Any] | None,
    default: Callable[[], R | None],
    payload: Any,
    kind: type[R],
    build: Callable[[Mapping[str, Any]], R],
    *,
    label: str,
    argument: str,
    dropped: str,
) -> R | None:
    """Where a delivery goes: the channel's ``route(payload)`` (a ``kind``, a dict read by ``build``,
    or ``None``: not answered), else ``default()``. A route that raises or returns anything else
    drops the delivery with one log line (``argument`` names the payload, ``dropped`` what is lost)."""
    try:
        if route is None:
            return default()
        decided = route(payload)
    except Exception as exc:
        log.error(
            "%s route(%s) raised, so %s is dropped: %s",
            label,
            argument,
            dropped,
            " ".join(f"{type(exc).__name__}: {exc}".split())[:500],
        )
        return None
    if decided is None or isinstance(decided, kind):
        return decided
    if isinstance(decided, Mapping):
        return build(decided)
    log.error(
        "%s route(%s) returned %r: return a %s, a dict or None", label, argument, decided, kind.__name__
    )
    return None
