"""What a compaction summarises and what it keeps (pi's ``prepareCompaction``, §5.5).

* Tokens are estimated as :mod:`fastagent_cli.models.context_budget` does (about four characters
  each for prose, more for digits and symbols; an image counts 1 200); the context's size is the
  last answer's reported usage plus estimates for what came after it (the request's fit to the
  window uses the same functions).
* The cut point: walk back from the newest entry summing estimates until ``keep_recent_tokens``;
  cut at the nearest valid point at or after there (a user, assistant or custom message, a
  ``custom_message`` or ``branch_summary``; never a tool result), pulling in the non-message
  entries just before it. A cut that lands inside a turn (not on a user message) is a *split
  turn*: that turn's prefix is summarised separately.
* A compaction made for an incoming prompt may follow another one (``again``): it re-summarises
  what the previous one kept.
* With ``max_kept`` (settings derived from a window): when the message that reaches
  ``keep_recent_tokens`` would make the kept part larger than that, it is summarised too (the cut
  moves to the next valid point after it); with none after it nothing is kept
  (:data:`KEEP_NOTHING`): a pasted block as large as the window must not survive the compaction
  that was meant to make room.
* A manual compaction (``manual``) of a session smaller than ``keep_recent_tokens`` summarises
  everything since the last boundary and keeps nothing (:data:`KEEP_NOTHING`), where an automatic
  one has nothing to do: asked to compact, the session compacts (FastAgent 0.18 compacted there
  too, with a summary of nothing and every message kept, which frees no room). Only a session
  with no message since its last boundary has nothing to compact.
* Repeated compactions re-summarise from the previous compaction's kept boundary, so what it kept
  is never lost, and update its summary (``previous_summary``).
* File lists are cumulative: the previous compaction's lists plus the ``path`` arguments of
  ``read`` / ``write`` / ``edit`` calls in what is summarised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastagent_cli.messages import Message
from fastagent_cli.models.context_budget import context_tokens, estimate_tokens, usage_tokens
from fastagent_cli.sessions.record import entry_message

__all__ = [
    "ALREADY_COMPACTED",
    "KEEP_NOTHING",
    "NOTHING_TO_COMPACT_TEXT",
    "CompactionPlan",
    "context_tokens",
    "estimate_tokens",
    "prepare_compaction",
    "usage_tokens",
]

ALREADY_COMPACTED = "Already compacted"
NOTHING_TO_COMPACT_TEXT = "Nothing to compact (session too small)"
KEEP_NOTHING = ""
"""A plan's ``first_kept_entry_id`` when everything is summarised (the entry then names itself)."""

Entry = Mapping[str, Any]


@dataclass(slots=True)
class CompactionPlan:
    first_kept_entry_id: str
    to_summarize: list[Message]
    turn_prefix: list[Message]
    tokens_before: int
    previous_summary: str | None = None
    read_files: set[str] = field(default_factory=set)
    modified_files: set[str] = field(default_factory=set)

    @property
    def split_turn(self) -> bool:
        return bool(self.turn_prefix)


def _is_cut_point(entry: Entry) -> bool:
    kind = entry.get("type")
    if kind == "message":
        return (entry.get("message") or {}).get("role") != "toolResult"
    return kind in ("custom_message", "branch_summary")


def _turn_start(path: Sequence[Entry], index: int, start: int) -> int:
    for i in range(index, start - 1, -1):
        entry = path[i]
        if entry.get("type") in ("custom_message", "branch_summary"):
            return i
        if entry.get("type") == "message" and (entry.get("message") or {}).get("role") == "user":
            return i
    return -1


def _cut_index(
    path: Sequence[Entry], start: int, end: int, keep_recent: int, max_kept: int | None = None
) -> int:
    """The index of the first kept entry (``end``: nothing is kept)."""
    cut_points = [i for i in range(start, end) if _is_cut_point(path[i])]
    if not cut_points:
        return start
    cut = cut_points[0]
    kept = 0
    for i in range(end - 1, start - 1, -1):
        entry = path[i]
        if entry.get("type") != "message":
            continue
        kept += estimate_tokens(entry.get("message") or {})
        if kept >= keep_recent:
            if max_kept is not None and kept > max_kept:
                return next((c for c in cut_points if c > i), end)
            cut = next((c for c in cut_points if c >= i), cut)
            break
    while cut > start and path[cut - 1].get("type") not in ("message", "compaction"):
        cut -= 1
    return cut


def _file_ops(messages: Sequence[Mapping[str, Any]], read: set[str], modified: set[str]) -> None:
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for block in message.get("content") or []:
            if block.get("type") != "toolCall":
                continue
            path = (block.get("arguments") or {}).get("path")
            if not isinstance(path, str):
                continue
            name = block.get("name")
            if name == "read":
                read.add(path)
            elif name in ("write", "edit"):
                modified.add(path)


def _messages(entries: Sequence[Entry]) -> list[Message]:
    return [m for e in entries if e.get("type") != "compaction" and (m := entry_message(dict(e)))]


def prepare_compaction(
    path: Sequence[Entry],
    keep_recent_tokens: int,
    max_kept: int | None = None,
    *,
    again: bool = False,
    manual: bool = False,
) -> CompactionPlan | str:
    """The plan for compacting the active ``path``, or why there is nothing to do
    (:data:`ALREADY_COMPACTED`, :data:`NOTHING_TO_COMPACT_TEXT`). ``again``: a path that ends
    with a compaction may be compacted once more (what it kept is summarised into its summary):
    a prompt needs the room that compaction left to its kept part. ``manual``: asked for, a
    session too small to cut compacts whole (see the module notes)."""
    if path and path[-1].get("type") == "compaction" and not again:
        return ALREADY_COMPACTED
    previous = next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), -1)
    start = previous + 1
    previous_summary: str | None = None
    read: set[str] = set()
    modified: set[str] = set()
    if previous >= 0:
        prior = path[previous]
        previous_summary = str(prior.get("summary") or "")
        kept = prior.get("firstKeptEntryId")
        start = next((i for i in range(previous) if path[i].get("id") == kept), start)
        details = prior.get("details") if not prior.get("fromHook") else None
        if isinstance(details, Mapping):
            read.update(f for f in details.get("readFiles") or [] if isinstance(f, str))
            modified.update(f for f in details.get("modifiedFiles") or [] if isinstance(f, str))
    end = len(path)
    tokens_before = context_tokens(_messages(path[max(previous, 0) : end]))
    if start >= end:
        return NOTHING_TO_COMPACT_TEXT
    cut = _cut_index(path, start, end, keep_recent_tokens, max_kept)
    if cut >= end:  # nothing kept: everything since the last boundary is summarised
        everything = _messages(path[start:end])
        if not everything:
            return NOTHING_TO_COMPACT_TEXT
        _file_ops(everything, read, modified)
        return CompactionPlan(KEEP_NOTHING, everything, [], tokens_before, previous_summary, read, modified)
    cut_entry = path[cut]
    on_user = cut_entry.get("type") == "message" and (cut_entry.get("message") or {}).get("role") == "user"
    turn_start = -1 if on_user else _turn_start(path, cut, start)
    history_end = turn_start if turn_start >= 0 else cut
    to_summarize = _messages(path[start:history_end])
    turn_prefix = _messages(path[turn_start:cut]) if turn_start >= 0 else []
    if not to_summarize and not turn_prefix:
        everything = _messages(path[start:end]) if manual else []
        if not everything:
            return NOTHING_TO_COMPACT_TEXT
        _file_ops(everything, read, modified)
        return CompactionPlan(KEEP_NOTHING, everything, [], tokens_before, previous_summary, read, modified)
    _file_ops(to_summarize, read, modified)
    _file_ops(turn_prefix, read, modified)
    return CompactionPlan(
        first_kept_entry_id=str(cut_entry["id"]),
        to_summarize=to_summarize,
        turn_prefix=turn_prefix,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        read_files=read,
        modified_files=modified,
    )
