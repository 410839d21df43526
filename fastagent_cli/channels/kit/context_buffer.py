"""Context buffer (``buffers``): un-summoned group discussion, folded into the next answered turn.

Per conversation *place* (a chat, a thread), the recent messages nobody addressed to the agent are
kept under a budget (feature K7): :data:`BUFFER_MAX_CHARS` for the rendered fold, each line cut to
:data:`BUFFER_LINE_MAX_CHARS`; when the budget is exceeded the oldest lines go first. The consume
protocol:

* :meth:`ContextBuffer.push` persists before the platform is acknowledged (a failed write raises,
  the webhook answers 500, the platform redelivers);
* :meth:`ContextBuffer.peek` renders the fold when a turn starts and says exactly which entries it
  used, without removing them;
* :meth:`ContextBuffer.commit` removes exactly those, and only when the turn completed: a failure or
  a crash before that keeps the discussion for the next summon, and a message that arrived while
  the turn ran stays for the turn after it.

An entry is a JSON object the channel shapes (it must have ``body``); the buffer adds ``seq``, its
identity, as the push is applied (in journal order, so every instance sharing the buffer numbers it
alike). The channel's ``line(entry)`` renders one fold line and is the budget's cost basis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastagent_cli.channels.kit.journal import JournaledState, StateWriteError, log
from fastagent_cli.state.channel_state import ChannelStateStore

__all__ = [
    "BUFFER_ATTACH_MAX",
    "BUFFER_LINE_MAX_CHARS",
    "BUFFER_MAX_CHARS",
    "BufferEntry",
    "ContextBuffer",
    "Fold",
    "clip_line",
]

BUFFER_MAX_CHARS = 4000
"""Budget of one place's fold, in characters of rendered lines (newlines included)."""
BUFFER_LINE_MAX_CHARS = 280
"""Cap of one message's line inside the fold: fairness between speakers, not fidelity."""
BUFFER_ATTACH_MAX = 3
"""How many buffered files, and how many buffered images, one summon pulls in (most recent)."""

BufferEntry = dict[str, Any]


def clip_line(text: str, limit: int = BUFFER_LINE_MAX_CHARS) -> str:
    """One line (whitespace collapsed) of at most ``limit`` code points, ``…`` marking a cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Fold:
    """What :meth:`ContextBuffer.peek` returns: the rendered lines and the entries they came from."""

    text: str
    consumed: tuple[BufferEntry, ...]


class _Buffers:
    __slots__ = ("next_seq", "places")

    def __init__(self) -> None:
        self.next_seq = 1
        self.places: dict[str, list[BufferEntry]] = {}


class ContextBuffer(JournaledState[_Buffers]):
    name = "buffers"

    def __init__(
        self,
        store: ChannelStateStore,
        *,
        label: str,
        line: Callable[[BufferEntry], str],
        is_entry: Callable[[BufferEntry], bool] = lambda entry: True,
        max_chars: int = BUFFER_MAX_CHARS,
    ) -> None:
        self._line = line
        self._is_entry = is_entry
        self.max_chars = max_chars
        super().__init__(store, label=label)

    # --- the document ---------------------------------------------------------------------------

    def empty(self) -> _Buffers:
        return _Buffers()

    def decode(self, data: Any) -> _Buffers:
        if not isinstance(data, dict) or not isinstance(data.get("places"), dict):
            raise ValueError("expected {next, places}")
        buffers = _Buffers()
        buffers.next_seq = int(data.get("next", 1))
        for place, entries in data["places"].items():
            if not isinstance(entries, list):
                raise ValueError(f"place {place!r} is not a list")
            for entry in entries:
                self._check(entry)
            buffers.places[str(place)] = list(entries)
            buffers.next_seq = max(buffers.next_seq, *(e["seq"] + 1 for e in entries), 1)
        return buffers

    def encode(self, state: _Buffers) -> Any:
        return {"next": state.next_seq, "places": state.places}

    def apply(self, state: _Buffers, op: Mapping[str, Any]) -> None:
        kind = op.get("op")
        place = str(op["place"])
        if kind == "push":
            entry = dict(op["entry"])
            entry.setdefault("seq", state.next_seq)  # numbered as applied: in journal order everywhere
            self._check(entry)
            entries = state.places.setdefault(place, [])
            if any(existing["seq"] == entry["seq"] for existing in entries):
                return
            entries.append(entry)
            state.next_seq = max(state.next_seq, entry["seq"] + 1)
            self._evict(entries)
        elif kind == "commit":
            seqs = set(op["seqs"])
            remaining = [e for e in state.places.get(place, []) if e["seq"] not in seqs]
            if remaining:
                state.places[place] = remaining
            else:
                state.places.pop(place, None)
        else:
            raise ValueError(f"unknown operation {kind!r}")

    def _check(self, entry: Any) -> None:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("seq"), int)
            or not isinstance(entry.get("body"), str)
            or not self._is_entry(entry)
        ):
            raise ValueError("a buffer entry with a missing or mistyped field")

    def _evict(self, entries: list[BufferEntry]) -> None:
        total = sum(len(self._line(e)) + 1 for e in entries)
        while len(entries) > 1 and total > self.max_chars:
            total -= len(self._line(entries.pop(0))) + 1

    # --- what channels call ---------------------------------------------------------------------

    async def push(self, place: str, entry: BufferEntry) -> None:
        """Record an un-summoned message (``body`` clipped to one line). Raises
        :class:`~fastagent_cli.channels.kit.journal.StateWriteError` when it cannot be persisted."""
        stored = {k: v for k, v in entry.items() if k != "seq"}
        stored["body"] = clip_line(str(entry.get("body", "")))
        await self.commit({"op": "push", "place": place, "entry": stored})

    def peek(self, place: str) -> Fold:
        entries = tuple(dict(e) for e in self.state.places.get(place, ()))
        return Fold("\n".join(self._line(e) for e in entries), entries)

    async def commit_consumed(self, place: str, consumed: Sequence[BufferEntry]) -> None:
        """Remove exactly ``consumed`` (call it on the turn's ``completed``). A failed write is
        logged: a restart may fold the same discussion once more."""
        if not consumed:
            return
        try:
            await self.commit(
                {"op": "commit", "place": place, "seqs": [e["seq"] for e in consumed]}, sync=False
            )
        except StateWriteError as exc:
            log.error("%s %s (a restart may fold answered discussion again)", self.label, exc)

    def places(self) -> list[str]:
        return list(self.state.places)
