"""What a first-party channel returns when it is mounted: its routes, plus a lifecycle.

A route channel is ``channel(ctx) -> {route key: handler}``. A stateful channel also has work to do
before it serves (load its state, replay unfinished turns, look itself up on the platform) and
after (stop its background turns). :class:`ChannelRoutes` is that dict with two optional
coroutines the host awaits: :meth:`~ChannelRoutes.start` once, before listening (a failure there is
a fatal channel error, like a broken file), and :meth:`~ChannelRoutes.aclose` on shutdown.

The checks every webhook shares live here too: a presented secret compared in constant time
(:func:`secret_matches`) and a signed request's timestamp within :data:`MAX_SIGNATURE_AGE_S` of now
(:func:`timestamp_fresh`: a replayed capture is refused).
"""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["MAX_SIGNATURE_AGE_S", "ChannelRoutes", "secret_matches", "timestamp_fresh"]

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
