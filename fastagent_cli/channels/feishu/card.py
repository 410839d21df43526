"""The streaming card (JSON 2.0) and its settled form (feature O11). Pure.

Two markdown elements: ``process`` (the volatile part: reasoning tail, tool lines, retry notice) and
``answer`` (append-only), so a full-text snapshot of the answer stays a prefix extension of the last
one and the client's typewriter stays smooth. Settling replaces the entity with the answer alone,
``streaming_mode`` off, and a one-line summary for the chat list and notifications. A card entity is
capped at 30 KB: :data:`CARD_MARKDOWN_MAX_BYTES` of Markdown a card.
"""

from __future__ import annotations

import json
import re

__all__ = [
    "ANSWER_ELEMENT",
    "CARD_MARKDOWN_MAX_BYTES",
    "PROCESS_ELEMENT",
    "card_entity_content",
    "card_summary",
    "final_card",
    "streaming_card",
    "utf8_prefix",
]

ANSWER_ELEMENT = "answer"
PROCESS_ELEMENT = "process"
CARD_MARKDOWN_MAX_BYTES = 20 * 1024
_SUMMARY_MAX = 60


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits ``max_bytes`` (whole code points)."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")


def card_summary(markdown: str) -> str:
    text = re.sub(r"```[\s\S]*?(```|$)", " ", markdown)
    for line in text.split("\n"):
        line = re.sub(r"^\s{0,3}(?:#{1,6}|>|[-*+]|\d+[.)])\s+", "", line)
        line = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", line)
        line = re.sub(r"[*_~`]", "", line).strip()
        if line:
            return line if len(line) <= _SUMMARY_MAX else line[: _SUMMARY_MAX - 1] + "…"
    return ""


def _card(elements: list[dict[str, str]], streaming: bool, summary: str | None = None) -> str:
    config: dict[str, object] = {"streaming_mode": streaming, "update_multi": True}
    if summary:
        config["summary"] = {"content": summary}
    return json.dumps({"schema": "2.0", "config": config, "body": {"elements": elements}}, ensure_ascii=False)


def streaming_card(process: str) -> str:
    return _card(
        [
            {"tag": "markdown", "content": process, "element_id": PROCESS_ELEMENT},
            {"tag": "markdown", "content": "", "element_id": ANSWER_ELEMENT},
        ],
        True,
    )


def final_card(markdown: str) -> str:
    return _card(
        [{"tag": "markdown", "content": markdown, "element_id": ANSWER_ELEMENT}],
        False,
        card_summary(markdown),
    )


def card_entity_content(card_id: str) -> str:
    """The ``interactive`` message content that mounts a card entity."""
    return json.dumps({"type": "card", "data": {"card_id": card_id}})
