"""Delivery dedup ring (``seen``): the last :data:`SEEN_CAPACITY` delivery ids (feature K8).

A platform that did not get its acknowledgement delivers the same event again. A channel records an
id once the delivery's own effect (the turn intent, the buffered message) is durable, and drops a
delivery whose id it has seen. The ring is a cache: an id is marked at once and written in the
background, and a lost write costs at most one duplicate after a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastagent_cli.channels.kit.journal import JournaledState
from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = ["SEEN_CAPACITY", "SeenRing"]

SEEN_CAPACITY = 2000


class _Ring:
    __slots__ = ("ids", "order")

    def __init__(self) -> None:
        self.order: list[str] = []
        self.ids: set[str] = set()


class SeenRing(JournaledState[_Ring]):
    name = "seen"

    def __init__(self, store: ChannelStateStore, *, label: str, capacity: int = SEEN_CAPACITY) -> None:
        self.capacity = capacity
        super().__init__(store, label=label)

    def empty(self) -> _Ring:
        return _Ring()

    def decode(self, data: Any) -> _Ring:
        if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
            raise ValueError("expected a list of ids")
        ring = _Ring()
        for item in data:
            self._add(ring, item)
        return ring

    def encode(self, state: _Ring) -> Any:
        return list(state.order)

    def apply(self, state: _Ring, op: Mapping[str, Any]) -> None:
        if op.get("op") != "add" or not isinstance(op.get("id"), str):
            raise ValueError("expected {op: add, id: string}")
        self._add(state, op["id"])

    def _add(self, ring: _Ring, item: str) -> None:
        if item in ring.ids:
            return
        ring.ids.add(item)
        ring.order.append(item)
        if len(ring.order) > self.capacity:
            excess = len(ring.order) - self.capacity
            for dropped in ring.order[:excess]:
                ring.ids.discard(dropped)
            del ring.order[:excess]

    def __contains__(self, item: object) -> bool:
        return item in self.state.ids

    def __len__(self) -> int:
        return len(self.state.order)

    def add(self, item: str) -> None:
        """Mark ``item`` seen now; persisted in the background."""
        if item not in self.state.ids:
            self.remember({"op": "add", "id": item})
