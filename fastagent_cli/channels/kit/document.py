"""One small state document replaced as a whole (``bot``, ``bot-auth``, ``onboarding``...).

The other stores journal many small operations; some channel state is a single value that changes
rarely and is read whole: the bot's identity, a rotating token pair, onboarding progress. A
:class:`StateDocument` keeps it behind the same :class:`~fastagent_cli.state.channel_state.
ChannelStateStore` (so a shared backend holds it too), and :meth:`StateDocument.set` makes a new
value durable before it is used. ``check(value)`` says whether a stored value has the expected
shape; one that does not is a warning and the document starts empty (``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastagent_cli.channels.kit.journal import JournaledState
from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = ["StateDocument"]


class _Box:
    __slots__ = ("value",)

    def __init__(self, value: Any = None) -> None:
        self.value = value


class StateDocument(JournaledState[_Box]):
    def __init__(
        self,
        store: ChannelStateStore,
        name: str,
        *,
        label: str,
        check: Callable[[Any], bool] = lambda value: True,
    ) -> None:
        self.name = name
        self._check = check
        super().__init__(store, label=label, compact_every=1)

    def empty(self) -> _Box:
        return _Box()

    def decode(self, data: Any) -> _Box:
        if data is not None and not self._check(data):
            raise ValueError("the stored value has the wrong shape")
        return _Box(data)

    def encode(self, state: _Box) -> Any:
        return state.value

    def apply(self, state: _Box, op: Mapping[str, Any]) -> None:
        if op.get("op") != "set":
            raise ValueError("expected {op: set, value}")
        value = op.get("value")
        if value is not None and not self._check(value):
            raise ValueError("a value with the wrong shape")
        state.value = value

    @property
    def value(self) -> Any:
        return self.state.value

    async def set(self, value: Any) -> None:
        """Make ``value`` durable, then current. Raises
        :class:`~fastagent_cli.channels.kit.journal.StateWriteError` (nothing changes)."""
        await self.commit({"op": "set", "value": value})
