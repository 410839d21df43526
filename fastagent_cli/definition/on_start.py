"""The ``On Start`` section: what the agent does when ``dev`` / ``start`` begin serving.

A Markdown heading of any level named ``On Start`` (case and a trailing colon ignored) in
``persona.md`` or the agent directory's own ``AGENTS.md`` (``CLAUDE.md``), up to the next heading
of the same or a higher level, is taken out of the system prompt and sent once, as the first
notice, when serving begins. Headings are ATX headings (``#`` to ``######``); lines inside fenced
code blocks are never headings. Several such sections are joined in file order.
"""

from __future__ import annotations

import re

__all__ = ["split_on_start"]

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")


def _heading(line: str) -> tuple[int, str] | None:
    match = _HEADING.match(line)
    if match is None:
        return None
    title = _CLOSING.sub("", (match.group(2) or "").strip()).strip()
    return len(match.group(1)), title


def _is_on_start(title: str) -> bool:
    return " ".join(title.rstrip(":").split()).casefold() == "on start"


def split_on_start(text: str) -> tuple[str, str | None]:
    """``text`` without its On Start sections, and their bodies (``None`` when there is none, or
    they are empty)."""
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    bodies: list[list[str]] = []
    section_level: int | None = None
    fence: str | None = None
    for line in lines:
        fence_match = _FENCE.match(line)
        heading = _heading(line) if fence is None else None
        if fence is None and fence_match is not None:
            fence = fence_match.group(1)[0] * 3
        elif fence is not None and fence_match is not None and fence_match.group(1).startswith(fence):
            fence = None
            heading = None
        if heading is not None and section_level is not None and heading[0] <= section_level:
            section_level = None
        if heading is not None and section_level is None and _is_on_start(heading[1]):
            section_level = heading[0]
            bodies.append([])
            continue
        if section_level is not None:
            bodies[-1].append(line)
        else:
            kept.append(line)
    if not bodies:
        return text, None
    joined = "\n\n".join("".join(body).strip() for body in bodies if "".join(body).strip())
    return "".join(kept), joined or None
