"""Threads the agent owns (``owned-threads``): where a continuation's session is (feature O8, seed).

In the default threaded mode a top-level ask owns a new session ``<kind>:<message_id>`` and its
answer opens a platform thread (``reply_in_thread``). The root is indexed *before* the ACK, so a
continuation in that thread (``root_id`` = the ask, or the ``thread_id`` the platform gave the
answer, learned afterwards) maps back to the session, and bare replies there are admitted under the
participant rule. ``rooms`` remembers each chat's most recently answered session: a new thread
starts from what its room knew. Each map keeps the newest :data:`MAX_ENTRIES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastagent_cli.channels.kit.journal import JournaledState
from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = ["MAX_ENTRIES", "OwnedThreads"]

MAX_ENTRIES = 5000
_MAPS = ("roots", "threads", "rooms")


class OwnedThreads(JournaledState[dict[str, dict[str, str]]]):
    name = "owned-threads"

    def __init__(self, store: ChannelStateStore, *, label: str) -> None:
        super().__init__(store, label=label)

    def empty(self) -> dict[str, dict[str, str]]:
        return {name: {} for name in _MAPS}

    def decode(self, data: Any) -> dict[str, dict[str, str]]:
        if not isinstance(data, dict) or not all(isinstance(data.get(m, {}), dict) for m in _MAPS):
            raise ValueError("expected {roots, threads, rooms}")
        state = self.empty()
        for name in _MAPS:
            for key, value in (data.get(name) or {}).items():
                if not isinstance(value, str):
                    raise ValueError(f"{name}[{key!r}] is not a session id")
                state[name][str(key)] = value
        return state

    def encode(self, state: dict[str, dict[str, str]]) -> Any:
        return state

    def apply(self, state: dict[str, dict[str, str]], op: Mapping[str, Any]) -> None:
        kind = op.get("op")
        if kind not in _MAPS or not isinstance(op.get("key"), str) or not isinstance(op.get("session"), str):
            raise ValueError("expected {op: roots|threads|rooms, key, session}")
        table = state[str(kind)]
        table.pop(op["key"], None)
        table[op["key"]] = op["session"]
        while len(table) > MAX_ENTRIES:
            del table[next(iter(table))]

    def lookup(self, *, thread_id: Any = None, root_id: Any = None) -> str | None:
        if isinstance(thread_id, str) and thread_id in self.state["threads"]:
            return self.state["threads"][thread_id]
        if isinstance(root_id, str):
            return self.state["roots"].get(root_id)
        return None

    def room(self, chat_id: str) -> str | None:
        return self.state["rooms"].get(chat_id)

    async def own_root(self, root: str, session: str) -> None:
        """Index a new root before the ACK (raises StateWriteError)."""
        await self.commit({"op": "roots", "key": root, "session": session})

    def learn_thread(self, thread_id: str, session: str) -> None:
        if self.state["threads"].get(thread_id) != session:
            self.remember({"op": "threads", "key": thread_id, "session": session})

    def answered_in(self, chat_id: str, session: str) -> None:
        if self.state["rooms"].get(chat_id) != session:
            self.remember({"op": "rooms", "key": chat_id, "session": session})
