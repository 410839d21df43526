"""What a first-party channel returns when it is mounted: its routes, plus a lifecycle.

A route channel is ``channel(ctx) -> {route key: handler}``. A stateful channel also has work to do
before it serves (load its state, replay unfinished turns, look itself up on the platform) and
after (stop its background turns). :class:`ChannelRoutes` is that dict with two optional
coroutines the host awaits: :meth:`~ChannelRoutes.start` once, before listening (a failure there is
a fatal channel error, like a broken file), and :meth:`~ChannelRoutes.aclose` on shutdown.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["ChannelRoutes", "secret_matches"]


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
