"""Matching and applying ``edit`` replacements, with pi's rules and messages.

Every ``oldText`` is matched against the *original* (BOM-stripped, LF-normalised) content: first
exactly, then in a whitespace-normalised ("fuzzy") form (NFKC, trailing whitespace stripped per
line, smart quotes to ASCII, Unicode dashes to ``-``, special spaces to a space). A match must be
unique (counted in fuzzy form) and edits must not overlap. When any edit needed the fuzzy form,
the lines the edits touch are rewritten from the normalised text and every other line keeps its
original bytes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from fastagent_cli.tools.coding._common import ToolFailure

__all__ = [
    "Edit",
    "apply_edits",
    "detect_line_ending",
    "normalize_for_fuzzy_match",
    "normalize_to_lf",
    "restore_line_endings",
    "strip_bom",
]

LineEnding = Literal["\r\n", "\n"]


@dataclass(frozen=True, slots=True)
class Edit:
    old_text: str
    new_text: str


@dataclass(frozen=True, slots=True)
class _Match:
    index: int
    start: int
    length: int
    new_text: str


def detect_line_ending(content: str) -> LineEnding:
    crlf = content.find("\r\n")
    lf = content.find("\n")
    if lf == -1 or crlf == -1:
        return "\n"
    return "\r\n" if crlf < lf else "\n"


def normalize_to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def restore_line_endings(text: str, ending: LineEnding) -> str:
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


def strip_bom(content: str) -> tuple[str, str]:
    """``(bom, text)``: the BOM (or ``""``) and the content without it."""
    return ("\ufeff", content[1:]) if content.startswith("\ufeff") else ("", content)


# JavaScript's String.prototype.trimEnd set (WhiteSpace and LineTerminator).
_JS_TRAILING_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"  # noqa: E501
_SINGLE_QUOTES = re.compile("[\u2018\u2019\u201a\u201b]")
_DOUBLE_QUOTES = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")


def normalize_for_fuzzy_match(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip(_JS_TRAILING_SPACE) for line in text.split("\n"))
    text = _SINGLE_QUOTES.sub("'", text)
    text = _DOUBLE_QUOTES.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


def _find(content: str, old_text: str) -> tuple[int, int, bool]:
    """``(index, length, fuzzy)`` of ``old_text`` in ``content``; index -1 when absent."""
    exact = content.find(old_text)
    if exact != -1:
        return exact, len(old_text), False
    fuzzy_old = normalize_for_fuzzy_match(old_text)
    return normalize_for_fuzzy_match(content).find(fuzzy_old), len(fuzzy_old), True


def _not_found(path: str, i: int, total: int) -> ToolFailure:
    if total == 1:
        return ToolFailure(
            f"Could not find the exact text in {path}. The old text must match exactly including all "
            "whitespace and newlines."
        )
    return ToolFailure(
        f"Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace "
        "and newlines."
    )


def _duplicate(path: str, i: int, total: int, count: int) -> ToolFailure:
    if total == 1:
        return ToolFailure(
            f"Found {count} occurrences of the text in {path}. The text must be unique. Please provide "
            "more context to make it unique."
        )
    return ToolFailure(
        f"Found {count} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide "
        "more context to make it unique."
    )


def _no_change(path: str, total: int) -> ToolFailure:
    if total == 1:
        return ToolFailure(
            f"No changes made to {path}. The replacement produced identical content. This might indicate "
            "an issue with special characters or the text not existing as expected."
        )
    return ToolFailure(f"No changes made to {path}. The replacements produced identical content.")


def _replace(content: str, matches: list[_Match], offset: int = 0) -> str:
    for match in sorted(matches, key=lambda m: m.start, reverse=True):
        start = match.start - offset
        content = content[:start] + match.new_text + content[start + match.length :]
    return content


def _line_spans(content: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    offset = 0
    for line in re.findall(r"[^\n]*\n|[^\n]+", content):
        spans.append((offset, offset + len(line)))
        offset += len(line)
    return spans


def _line_range(spans: list[tuple[int, int]], match: _Match) -> tuple[int, int]:
    end = match.start + match.length
    first = next((i for i, (s, e) in enumerate(spans) if s <= match.start < e), -1)
    if first == -1:
        raise ToolFailure("Replacement range is outside the base content.")
    last = first
    while last < len(spans) and spans[last][1] < end:
        last += 1
    if last >= len(spans):
        raise ToolFailure("Replacement range is outside the base content.")
    return first, last + 1


def _replace_keeping_lines(original: str, base: str, matches: list[_Match]) -> str:
    """Apply matches found in ``base`` (a normalised view of ``original``), rewriting only the
    lines they touch from ``base`` and copying every other line from ``original``."""
    original_lines = re.findall(r"[^\n]*\n|[^\n]+", original)
    spans = _line_spans(base)
    if len(original_lines) != len(spans):
        raise ToolFailure(
            "Cannot preserve unchanged lines because the base content has a different line count."
        )
    groups: list[tuple[int, int, list[_Match]]] = []
    for match in sorted(matches, key=lambda m: m.start):
        first, last = _line_range(spans, match)
        if groups and first < groups[-1][1]:
            start, end, members = groups[-1]
            groups[-1] = (start, max(end, last), [*members, match])
        else:
            groups.append((first, last, [match]))
    parts: list[str] = []
    cursor = 0
    for first, last, members in groups:
        parts.extend(original_lines[cursor:first])
        begin, finish = spans[first][0], spans[last - 1][1]
        parts.append(_replace(base[begin:finish], members, begin))
        cursor = last
    parts.extend(original_lines[cursor:])
    return "".join(parts)


def apply_edits(content: str, edits: list[Edit], path: str) -> str:
    """The new content (LF-normalised) after every edit, or a :class:`ToolFailure` in pi's words."""
    normalized = [Edit(normalize_to_lf(e.old_text), normalize_to_lf(e.new_text)) for e in edits]
    total = len(normalized)
    for i, edit in enumerate(normalized):
        if not edit.old_text:
            if total == 1:
                raise ToolFailure(f"oldText must not be empty in {path}.")
            raise ToolFailure(f"edits[{i}].oldText must not be empty in {path}.")
    fuzzy = any(index != -1 and used for index, _, used in (_find(content, e.old_text) for e in normalized))
    base = normalize_for_fuzzy_match(content) if fuzzy else content
    fuzzy_base = normalize_for_fuzzy_match(base)
    matches: list[_Match] = []
    for i, edit in enumerate(normalized):
        index, length, _ = _find(base, edit.old_text)
        if index == -1:
            raise _not_found(path, i, total)
        count = fuzzy_base.count(normalize_for_fuzzy_match(edit.old_text))
        if count > 1:
            raise _duplicate(path, i, total, count)
        matches.append(_Match(i, index, length, edit.new_text))
    ordered = sorted(matches, key=lambda m: m.start)
    for previous, current in zip(ordered, ordered[1:], strict=False):
        if previous.start + previous.length > current.start:
            raise ToolFailure(
                f"edits[{previous.index}] and edits[{current.index}] overlap in {path}. "
                "Merge them into one edit or target disjoint regions."
            )
    updated = _replace_keeping_lines(content, base, matches) if fuzzy else _replace(base, matches)
    if updated == content:
        raise _no_change(path, total)
    return updated
