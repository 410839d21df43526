"""Deferred-tool activation for one turn.

The active set starts as every non-deferred tool plus the names the session's
``fastagent:tool-activation`` delta entries recorded. ``activate`` is additive, ignores unknown
names, records exactly the newly activated names as one delta entry, and tells the calling tool
which names it added (stamped on its result as ``addedToolNames``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fastagent_cli.sessions.record import TOOL_ACTIVATION_TYPE, SessionRecord
from fastagent_cli.tools.base import Tool

__all__ = ["ActivationState", "CallActivation", "initial_active"]


def initial_active(tools: Iterable[Tool], recorded: Iterable[str]) -> list[str]:
    registered = {t.name: t for t in tools}
    names = [t.name for t in registered.values() if not t.deferred]
    for name in recorded:
        if name in registered and name not in names:
            names.append(name)
    return names


class ActivationState:
    def __init__(
        self, tools: Sequence[Tool], record: SessionRecord | None, recorded: Iterable[str] = ()
    ) -> None:
        self._registered = [t.name for t in tools]
        self._active = initial_active(tools, recorded)
        self._record = record

    def active(self) -> list[str]:
        return list(self._active)

    def registered(self) -> list[str]:
        return list(self._registered)

    def activate(self, names: Sequence[str]) -> list[str]:
        added = [n for n in dict.fromkeys(names) if n in self._registered and n not in self._active]
        if added:
            if self._record is not None:
                self._record.append("custom", customType=TOOL_ACTIVATION_TYPE, data={"names": added})
            self._active.extend(added)
        return added

    def for_call(self) -> CallActivation:
        return CallActivation(self)


class CallActivation:
    """The :class:`~fastagent_cli.tools.base.ToolActivation` one tool call sees."""

    def __init__(self, state: ActivationState) -> None:
        self._state = state
        self.added: list[str] = []

    def active(self) -> list[str]:
        return self._state.active()

    def registered(self) -> list[str]:
        return self._state.registered()

    def activate(self, names: Sequence[str]) -> list[str]:
        added = self._state.activate(names)
        self.added.extend(added)
        return added
