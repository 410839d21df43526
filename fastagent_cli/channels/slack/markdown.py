"""Slack's Markdown: what the channel and ``slack_send`` post as ``markdown_text``. Pure.

Standard Markdown, at most :data:`MAX_MARKDOWN` characters a call (Slack takes 12 000):
:func:`chunk_markdown` splits longer text at paragraph or line boundaries and keeps code fences
balanced across parts; :func:`sanitize_markdown` neutralises Slack's notification controls.
"""

from __future__ import annotations

import re

__all__ = ["MAX_MARKDOWN", "NO_REPLY", "chunk_markdown", "chunk_text", "sanitize_markdown", "with_footer"]

MAX_MARKDOWN = 10_000
NO_REPLY = "(no reply)"
_CONTROL = re.compile(r"<[@!][^<>]*>")


def sanitize_markdown(text: str) -> str:
    """Neutralise Slack's notification controls (``<!channel>``, ``<@U1>``...): the model's answer
    never pings anyone; deliberate mentions belong to ``slack_send``."""
    return _CONTROL.sub(lambda m: "&lt;" + m.group(0)[1:], text)


def chunk_text(text: str, limit: int = MAX_MARKDOWN) -> list[str]:
    """Parts of at most ``limit`` code points, cut at a paragraph, else a line, else anywhere."""
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[:limit]
        cut = window.rfind("\n\n")
        cut = cut + 2 if cut > 0 else window.rfind("\n") + 1
        if cut <= 0:
            cut = limit
        parts.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        parts.append(rest)
    return parts


_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


def chunk_markdown(markdown: str, limit: int = MAX_MARKDOWN) -> list[str]:
    """Markdown parts of at most ``limit`` code points; a code fence open at a cut is closed there
    and reopened (same info string) at the start of the next part."""
    if len(markdown) <= limit:
        return [markdown]
    out: list[str] = []
    fence: tuple[str, str] | None = None
    for raw in chunk_text(markdown, limit - 140):
        entering = fence
        for line in raw.split("\n"):
            found = _FENCE.match(line)
            if not found or len(found.group(1)) > 64:
                continue
            marker = found.group(1)
            if fence is None:
                fence = (marker, marker + found.group(2)[:64])
            elif marker[0] == fence[0][0] and len(marker) >= len(fence[0]):
                fence = None
        prefix = f"{entering[1]}\n" if entering else ""
        suffix = f"\n{fence[0]}" if fence else ""
        out.append(prefix + raw + suffix)
    return out


def with_footer(answer: str, disclaimer: str | None) -> str:
    """The answer (``(no reply)`` when empty) with the ``ai_disclaimer`` footer, in italics."""
    body = answer.strip() or NO_REPLY
    return f"{body}\n\n_{disclaimer.strip()}_" if disclaimer and disclaimer.strip() else body
