"""The character-based token estimate of a text and of a message, and the per-message counts of
one conversation kept across its requests (:class:`TokenCounts`).

A request is measured many times per turn (the fit before it is sent, the compaction threshold
after the turn, the server's rate learnt from the answer), and each measure covers the whole
history. :class:`TokenCounts` counts each message once: the counts of a conversation that only
grew since the last measure are the kept ones plus those of the new messages, so a measure costs
one comparison of the known messages (C speed) and the estimate of what is new, however long the
conversation is. The count is a function of the message's content alone, so the numbers are those
of counting afresh; a conversation that changed otherwise (a compaction, a move to another branch)
is counted afresh and kept instead. It lives in the record's ``memo`` (:func:`conversation_counts`):
in one process it lasts as long as the record is kept; after a restart the first measure counts
the history once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

__all__ = [
    "CHARS_PER_TOKEN",
    "IMAGE_CHARS",
    "TokenCounts",
    "conversation_counts",
    "dense_units",
    "estimate_text",
    "estimate_tokens",
    "message_counts",
]

CHARS_PER_TOKEN = 4
IMAGE_CHARS = 4_800
"""An image counts as this many characters (pi's rule: 1 200 tokens)."""

_WORDS = bytes(range(ord("a"), ord("z") + 1)) + bytes(range(ord("A"), ord("Z") + 1)) + b" \t"
_ASCII_DENSE = bytes(c for c in range(128) if c not in _WORDS)
_MEMO_SLOT = "token-counts"


def dense_units(text: str) -> float:
    """Tokens of ``text`` (without the rounding): ASCII letters, spaces and tabs four to a token,
    other ASCII characters (digits, punctuation, newlines) one each, the rest a token per two
    bytes of UTF-8. Counted with ``bytes.translate`` (C speed: a 1 MB text costs about 2 ms)."""
    if text.isascii():
        data = text.encode("ascii")
        words = len(data) - len(data.translate(None, _WORDS))
        return words / CHARS_PER_TOKEN + (len(data) - words)
    data = text.encode("utf-8", "surrogatepass")
    dense = data.translate(None, _WORDS)
    other = len(dense.translate(None, _ASCII_DENSE))  # the bytes of non-ASCII characters
    words = len(data) - len(dense)
    return words / CHARS_PER_TOKEN + (len(dense) - other) + other / 2


def estimate_text(text: str) -> int:
    """A conservative token count of ``text``: English prose comes out near chars/4, while digits,
    symbols and non-Latin scripts (which tokenizers split finely) count what they really cost."""
    return math.ceil(dense_units(text)) if text else 0


def estimate_tokens(message: Mapping[str, Any]) -> int:
    """:func:`estimate_text` of a message's text, thinking and tool calls (name and arguments);
    an image counts :data:`IMAGE_CHARS` / 4, a PDF its base64 characters / 4."""
    content = message.get("content")
    if isinstance(content, str):
        return estimate_text(content)
    units = 0.0
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            units += dense_units(str(block.get("text", "")))
        elif kind == "thinking":
            units += dense_units(str(block.get("thinking", "")))
        elif kind == "toolCall":
            units += dense_units(str(block.get("name", "")))
            units += dense_units(json.dumps(block.get("arguments", {}), ensure_ascii=False))
        elif kind == "image":
            units += IMAGE_CHARS / CHARS_PER_TOKEN
        elif kind == "document":  # a PDF: its pages' text and images, roughly its base64 size
            units += len(str(block.get("data", ""))) / CHARS_PER_TOKEN
    return math.ceil(units)


class TokenCounts:
    """The :func:`estimate_tokens` of each message of one conversation, kept for the next
    measure. The kept counts must be read, not changed."""

    __slots__ = ("_counts", "_messages")

    def __init__(self) -> None:
        self._messages: list[Mapping[str, Any]] = []
        self._counts: list[int] = []

    def of(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """The counts of ``messages``, in order: the kept ones where ``messages`` starts with the
        known conversation (or is a start of it), the rest counted now."""
        known, counts = self._messages, self._counts
        size, have = len(messages), len(known)
        # (list equality compares the items by identity first: the same message objects cost
        # no walk of their content; an equal copy counts the same, an unequal one ends it)
        head = messages[:have]
        if size >= have and (head if isinstance(head, list) else list(head)) == known:
            if size == have:
                return counts
            counts = counts + [estimate_tokens(m) for m in messages[have:]]
        elif size < have and known[:size] == list(messages):
            return counts[:size]
        else:
            counts = [estimate_tokens(m) for m in messages]
        self._messages, self._counts = list(messages), counts
        return counts


def message_counts(messages: Sequence[Mapping[str, Any]], counts: TokenCounts | None) -> list[int]:
    """Each message's estimate, from ``counts`` when given."""
    return counts.of(messages) if counts is not None else [estimate_tokens(m) for m in messages]


def conversation_counts(memo: MutableMapping[Any, Any] | None) -> TokenCounts | None:
    """The counts kept in a conversation's ``memo`` (a record's, see
    :attr:`~fastagent_cli.models.types.ModelRequest.memo`); ``None`` without one."""
    if memo is None:
        return None
    counts = memo.get(_MEMO_SLOT)
    if not isinstance(counts, TokenCounts):
        counts = memo[_MEMO_SLOT] = TokenCounts()
    return counts
