"""Thread participation (``thread-participants``) and the participant rule (features K9, K10).

Who the agent has *heard* in a group thread, and whether it has answered there. The rule: in a
direct message the agent always answers; a message that mentions the agent summons it; a message
that mentions only other people is discussion; a bare message summons the agent only where it has
answered before and has heard at most one human (a second human restores the mention requirement).

The store is a cache with caps: at most :data:`MAX_THREADS` threads and :data:`MAX_HUMANS` humans
each. Observations only accumulate. When full, threads the agent only listened to (bystander
threads) are evicted before the ones it takes part in, least recently touched first, and never the
thread just recorded. The key must be the session id of the thread, so the record speaks about the
conversation that answered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fastagent_cli.channels.kit.journal import JournaledState
from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = ["MAX_HUMANS", "MAX_THREADS", "ThreadParticipants", "summons"]

MAX_THREADS = 1000
MAX_HUMANS = 2


class ThreadParticipants(JournaledState[dict[str, dict[str, Any]]]):
    name = "thread-participants"

    def __init__(
        self,
        store: ChannelStateStore,
        *,
        label: str,
        max_threads: int = MAX_THREADS,
        max_humans: int = MAX_HUMANS,
    ) -> None:
        self.max_threads = max_threads
        self.max_humans = max_humans
        super().__init__(store, label=label)

    def empty(self) -> dict[str, dict[str, Any]]:
        return {}

    def decode(self, data: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(data, dict):
            raise ValueError("expected an object of threads")
        out: dict[str, dict[str, Any]] = {}
        for key, record in data.items():
            humans = record.get("humans") if isinstance(record, dict) else None
            spoke = record.get("agentSpoke") if isinstance(record, dict) else None
            if not isinstance(humans, list) or not all(isinstance(h, str) for h in humans):
                raise ValueError(f"thread {key!r} has no list of humans")
            if not isinstance(spoke, bool):
                raise ValueError(f"thread {key!r} has no agentSpoke flag")
            out[str(key)] = {"humans": humans[: self.max_humans], "agentSpoke": spoke}
        return out

    def encode(self, state: dict[str, dict[str, Any]]) -> Any:
        return state

    def apply(self, state: dict[str, dict[str, Any]], op: Mapping[str, Any]) -> None:
        if op.get("op") != "merge" or not isinstance(op.get("key"), str):
            raise ValueError("expected {op: merge, key: string}")
        key = op["key"]
        previous = state.pop(key, None) or {"humans": [], "agentSpoke": False}
        humans = list(previous["humans"])
        for human in op.get("humans") or ():
            if len(humans) >= self.max_humans:
                break
            if isinstance(human, str) and human not in humans:
                humans.append(human)
        state[key] = {"humans": humans, "agentSpoke": bool(previous["agentSpoke"] or op.get("agentSpoke"))}
        while len(state) > self.max_threads:
            victim = next((k for k, r in state.items() if k != key and not r["agentSpoke"]), None)
            if victim is None:
                victim = next((k for k in state if k != key), None)
            if victim is None:
                break
            del state[victim]

    # --- what channels call ---------------------------------------------------------------------

    def admits_bare_message(self, key: str) -> bool:
        record = self.state.get(key)
        return bool(record and record["agentSpoke"] and len(record["humans"]) <= 1)

    def agent_spoke_in(self, key: str) -> bool:
        record = self.state.get(key)
        return bool(record and record["agentSpoke"])

    def merge(self, key: str, *, humans: Iterable[str] = (), agent_spoke: bool = False) -> None:
        """Record what was just heard (idempotent). Only new information is written; a repeat only
        refreshes the thread's recency in memory."""
        heard = [h for h in humans if h]
        record = self.state.get(key)
        if record is not None:
            known = record["humans"]
            new_humans = [h for h in heard if h not in known][: max(0, self.max_humans - len(known))]
            if not new_humans and (record["agentSpoke"] or not agent_spoke):
                self.state[key] = self.state.pop(key)  # touched: most recent now
                return
        op: dict[str, Any] = {"op": "merge", "key": key, "humans": heard}
        if agent_spoke:
            op["agentSpoke"] = True
        self.remember(op)


def summons(
    participants: ThreadParticipants,
    key: str,
    *,
    direct: bool,
    mentions_agent: bool,
    mentions_others: bool,
) -> bool:
    """The participant rule for one incoming message (see the module doc)."""
    if direct or mentions_agent:
        return True
    if mentions_others:
        return False
    return participants.admits_bare_message(key)
