"""Resource subscriptions on both MCP wires.

A connection negotiates the newest protocol the server speaks (the SDK's ``auto`` mode). On the
2026-07-28 wire ``resources/subscribe`` is gone (servers answer -32601) and one
``subscriptions/listen`` stream carries the updates of every subscribed URI: :class:`Listener`
keeps that stream open in the connection's owner task, opens it again (with a fresh read of each
resource, since nothing is replayed) when it is lost, and re-opens it when the set of URIs
changes. On older wires each URI is subscribed with ``resources/subscribe`` and updates arrive as
``notifications/resources/updated`` (see :func:`subscribe_each`). Either way ``on_updated(uri)``
hears each update; what was refused is kept per URI with the server's reason.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence

import anyio
from mcp_types import CONNECTION_CLOSED

from mcp import Client
from mcp.client.subscriptions import ListenNotSupportedError, Subscription, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

__all__ = ["LISTEN_VERSION", "Listener", "listens", "subscribe_each"]

log = logging.getLogger("fastagent.mcp")

LISTEN_VERSION = "2026-07-28"
"""The first protocol revision with ``subscriptions/listen`` (and without ``resources/subscribe``)."""
_BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


def listens(client: Client) -> bool:
    """Whether the negotiated protocol subscribes through ``subscriptions/listen``."""
    version = client.protocol_version
    return isinstance(version, str) and version >= LISTEN_VERSION


async def subscribe_each(client: Client, uris: Sequence[str], errors: dict[str, str], server: str) -> None:
    """``resources/subscribe`` for each URI (the wire before 2026-07-28); refusals into ``errors``."""
    for uri in uris:
        try:
            with warnings.catch_warnings():  # deprecated by the SDK for the 2026 wire only
                warnings.simplefilter("ignore")
                pending = client.session.subscribe_resource(uri)
            await pending
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise
            errors[uri] = exc.message or str(exc)
            log.warning("[mcp] server %s cannot watch %s: %s", server, uri, errors[uri])


class Listener:
    """The ``subscriptions/listen`` stream of one connection (run :meth:`run` in its owner task)."""

    def __init__(self, server: str, on_updated: Callable[[str], None] | None) -> None:
        self.server = server
        self.uris: tuple[str, ...] = ()
        self.errors: dict[str, str] = {}
        self._on_updated = on_updated
        self._changed = anyio.Event()
        self._acked = anyio.Event()

    def change(self, uris: Sequence[str]) -> None:
        """Listen for ``uris`` from now on (the stream is re-opened)."""
        self.uris = tuple(dict.fromkeys(uris))
        self._acked = anyio.Event()
        self._changed.set()

    async def acknowledged(self) -> None:
        """Wait until the server answered the current set of URIs (honoured or refused)."""
        await self._acked.wait()

    def _updated(self, uri: str) -> None:
        if self._on_updated is not None:
            self._on_updated(uri)

    async def run(self, client: Client) -> None:
        """Keep the stream open for the current URIs until the connection ends."""
        failures = 0
        refetch = False
        while True:
            if not self.uris:
                self._acked.set()
                await self._changed.wait()
            self._changed = anyio.Event()
            uris = self.uris
            acked = self._acked
            try:
                async with client.listen(resource_subscriptions=list(uris)) as sub:
                    honored = set(sub.honored.resource_subscriptions or ()) if sub.honored else set()
                    for uri in uris:
                        if uri in honored:
                            self.errors.pop(uri, None)
                        else:
                            self.errors[uri] = "the server did not accept the subscription"
                    acked.set()
                    failures = 0
                    if refetch:  # updates while the stream was down are not replayed
                        for uri in honored:
                            self._updated(uri)
                    refetch = True
                    await self._pump(sub)
                    if self._changed.is_set():
                        continue
                log.info("[mcp] server %s closed its subscription stream; listening again", self.server)
            except SubscriptionLost as exc:
                log.info("[mcp] server %s: subscription stream lost (%s); listening again", self.server, exc)
            except ListenNotSupportedError as exc:  # pragma: no cover - listens() said it would
                self._refuse(uris, str(exc), acked)
                return
            except MCPError as exc:
                if exc.code == CONNECTION_CLOSED:
                    acked.set()
                    return
                self._refuse(uris, exc.message or str(exc), acked)
                await self._changed.wait()  # refused: only a new set of URIs is worth asking again
                continue
            with anyio.move_on_after(_BACKOFF_S[min(failures, len(_BACKOFF_S) - 1)]):
                await self._changed.wait()
            failures += 1

    async def _pump(self, sub: Subscription) -> None:
        """Deliver updates until the stream ends or the URIs change."""
        async with anyio.create_task_group() as group:

            async def stop_on_change() -> None:
                await self._changed.wait()
                group.cancel_scope.cancel()

            group.start_soon(stop_on_change)
            async for event in sub:
                if isinstance(event, ResourceUpdated):
                    self._updated(event.uri)
            group.cancel_scope.cancel()

    def _refuse(self, uris: Sequence[str], why: str, acked: anyio.Event) -> None:
        for uri in uris:
            self.errors[uri] = why
            log.warning("[mcp] server %s cannot watch %s: %s", self.server, uri, why)
        acked.set()
