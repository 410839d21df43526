"""Thread inheritance: a new session created with a parent starts from the parent's history.

The fork point is the first ``branch_hints`` hint found on the parent's active path (an entry id,
or a platform message id a channel put in a prompt, searched newest first), extended to the end of
that exchange; without a hit, the parent's present state. The copy is then windowed
to the newest 50 exchanges within about 50 000 tokens (chars/4, images 1 600 tokens); the newest
exchange is always kept. Hints are capped at 16 of at most 128 characters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastagent_cli.sessions.record import SessionRecord

__all__ = ["INHERIT_MAX_EXCHANGES", "INHERIT_MAX_TOKENS", "Inheritance", "inherited_entries"]

INHERIT_MAX_EXCHANGES = 50
INHERIT_MAX_TOKENS = 50_000
IMAGE_TOKENS = 1_600
MAX_HINTS = 16
MAX_HINT_CHARS = 128


@dataclass(frozen=True, slots=True)
class Inheritance:
    parent_session: str
    branch_hints: tuple[str, ...] = ()


def inherited_entries(parent: SessionRecord, inherit: Inheritance) -> list[dict[str, Any]]:
    path = [e for e in parent.path() if e["type"] == "message"]
    hints = [h for h in inherit.branch_hints[:MAX_HINTS] if len(h) <= MAX_HINT_CHARS]
    cut = len(path)
    texts = [json.dumps(e["message"], ensure_ascii=False) for e in path]
    for hint in hints:
        index = next((i for i, e in enumerate(path) if e["id"] == hint), None)
        if index is None:
            index = next((i for i in range(len(path) - 1, -1, -1) if hint in texts[i]), None)
        if index is not None:
            cut = _end_of_exchange(path, index)
            break
    exchanges = _exchanges(path[:cut])
    kept: list[list[dict[str, Any]]] = []
    budget = INHERIT_MAX_TOKENS
    for exchange in reversed(exchanges[-INHERIT_MAX_EXCHANGES:]):
        cost = sum(_tokens(e) for e in exchange)
        if kept and cost > budget:
            break
        kept.append(exchange)
        budget -= cost
    out: list[dict[str, Any]] = []
    parent_id: str | None = None
    for exchange in reversed(kept):
        for entry in exchange:
            copy = dict(entry)
            copy["parentId"] = parent_id
            out.append(copy)
            parent_id = copy["id"]
    return out


def _is_user(entry: dict[str, Any]) -> bool:
    return bool(entry["message"].get("role") == "user")


def _end_of_exchange(path: list[dict[str, Any]], index: int) -> int:
    end = index + 1
    while end < len(path) and not _is_user(path[end]):
        end += 1
    return end


def _exchanges(path: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: list[list[dict[str, Any]]] = []
    for entry in path:
        if _is_user(entry) or not groups:
            groups.append([entry])
        else:
            groups[-1].append(entry)
    return groups


def _tokens(entry: dict[str, Any]) -> int:
    content = entry["message"].get("content")
    if isinstance(content, str):
        return len(content) // 4
    total = 0
    for block in content or []:
        if block.get("type") == "image":
            total += IMAGE_TOKENS
        else:
            total += len(json.dumps(block, ensure_ascii=False)) // 4
    return total
