"""Markdown frontmatter: the YAML block between a leading ``---`` and the next ``---`` line.

Skills carry their metadata this way (Agent Skills: ``name``, ``description``,
``disable-model-invocation``; other keys such as ``license``, ``metadata`` or ``allowed-tools``
are kept but unused). This reads the YAML subset frontmatter uses, without a YAML dependency:

* ``key: value`` lines with plain, ``'single'`` or ``"double"`` quoted scalars; ``true`` /
  ``false`` / ``null`` / integers; a plain value may continue on more-indented lines (folded);
* block scalars ``key: |`` (literal) and ``key: >`` (folded), with ``-`` / ``+`` chomping;
* one nested level: ``key:`` followed by indented ``- item`` lines (a list) or ``sub: value``
  lines (a mapping);
* ``#`` comments and blank lines.

As in pi, text without a leading ``---`` line, or without a closing one, has no frontmatter.
Anything else that is not in the subset raises :class:`FrontmatterError` with the line number.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["FrontmatterError", "parse_frontmatter", "strip_frontmatter"]

_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*?))?\s*$")
_BLOCK = re.compile(r"^([|>])([+-]?)\s*(?:#.*)?$")


class FrontmatterError(ValueError):
    pass


def _split(text: str) -> tuple[list[str] | None, str]:
    normalized = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = normalized.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None, normalized
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            return lines[1:index], "\n".join(lines[index + 1 :])
    return None, normalized


def strip_frontmatter(text: str) -> str:
    """The body without its frontmatter block."""
    return _split(text)[1]


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """``(frontmatter, body)``; raises :class:`FrontmatterError` on YAML outside the subset."""
    block, body = _split(text)
    if block is None:
        return {}, body
    return _Parser(block).parse(), body


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _scalar(raw: str, line_no: int) -> Any:
    value = raw.strip()
    if not value:
        return None
    if value[0] == '"':
        end = _closing_double(value)
        if end < 0:
            raise FrontmatterError(f"line {line_no}: unterminated double-quoted string")
        _trailing(value[end + 1 :], line_no)
        try:
            return json.loads(value[: end + 1])
        except json.JSONDecodeError:
            raise FrontmatterError(f"line {line_no}: invalid escape in double-quoted string") from None
    if value[0] == "'":
        match = re.match(r"'((?:[^']|'')*)'", value)
        if not match:
            raise FrontmatterError(f"line {line_no}: unterminated single-quoted string")
        _trailing(value[match.end() :], line_no)
        return match.group(1).replace("''", "'")
    value = re.split(r"\s+#", value, maxsplit=1)[0].rstrip()
    if value.startswith(("[", "{", "&", "*", "!", "@", "`")) and not value.startswith("[]"):
        raise FrontmatterError(f"line {line_no}: unsupported YAML syntax {value[:20]!r} (quote the value)")
    lowered = value.lower()
    if lowered in ("true", "yes"):
        return True
    if lowered in ("false", "no"):
        return False
    if lowered in ("null", "~"):
        return None
    if value == "[]":
        return []
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    return value


def _closing_double(value: str) -> int:
    i = 1
    while i < len(value):
        if value[i] == "\\":
            i += 2
            continue
        if value[i] == '"':
            return i
        i += 1
    return -1


def _trailing(rest: str, line_no: int) -> None:
    rest = rest.strip()
    if rest and not rest.startswith("#"):
        raise FrontmatterError(f"line {line_no}: unexpected text after a quoted string: {rest[:20]!r}")


class _Parser:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.pos = 0

    def parse(self) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            line_no = self.pos + 2  # the opening --- is line 1
            if "\t" in line[: _indent(line) + 1] and line.strip():
                raise FrontmatterError(f"line {line_no}: tabs are not allowed for indentation")
            if not line.strip() or line.lstrip().startswith("#"):
                self.pos += 1
                continue
            if _indent(line) > 0:
                raise FrontmatterError(f"line {line_no}: unexpected indentation")
            match = _KEY.match(line)
            if not match:
                raise FrontmatterError(f'line {line_no}: expected "key: value", got {line.strip()[:40]!r}')
            key, raw = match.group(1), match.group(2) or ""
            self.pos += 1
            result[key] = self._value(raw, line_no)
        return result

    def _children(self, parent_indent: int) -> list[tuple[int, str]]:
        """The following lines indented deeper than ``parent_indent`` (blank lines included)."""
        taken: list[tuple[int, str]] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.strip() and _indent(line) <= parent_indent:
                break
            taken.append((self.pos + 2, line))
            self.pos += 1
        while taken and not taken[-1][1].strip():
            taken.pop()
            self.pos -= 1
        return taken

    def _value(self, raw: str, line_no: int) -> Any:
        block = _BLOCK.match(raw)
        if block:
            return self._block_scalar(block.group(1), block.group(2))
        children = self._children(0)
        if raw.strip():
            if not children:
                return _scalar(raw, line_no)
            if raw.strip()[0] in "\"'":
                raise FrontmatterError(f"line {children[0][0]}: unexpected indentation after a quoted value")
            parts = [raw.strip(), *(text.strip() for _, text in children)]
            return _fold(parts)
        if not children:
            return None
        return _nested(children)

    def _block_scalar(self, style: str, chomp: str) -> str:
        children = self._children(0)
        content = [text for _, text in children]
        width = min((_indent(t) for t in content if t.strip()), default=0)
        body = [t[width:] if t.strip() else "" for t in content]
        text = "\n".join(body) if style == "|" else _fold(body)
        if chomp == "-":
            return text.rstrip("\n")
        return text.rstrip("\n") + "\n" if text else ""


def _fold(lines: list[str]) -> str:
    out: list[str] = []
    for line in lines:
        if not line:
            out.append("\n")
        elif out and not out[-1].endswith("\n"):
            out.append(" " + line)
        else:
            out.append(line)
    return "".join(out).strip(" ")


def _nested(children: list[tuple[int, str]]) -> Any:
    items = [(n, t) for n, t in children if t.strip() and not t.lstrip().startswith("#")]
    if all(t.lstrip().startswith("- ") or t.strip() == "-" for _, t in items):
        return [_scalar(t.strip()[1:], n) for n, t in items]
    mapping: dict[str, Any] = {}
    width = _indent(items[0][1])
    for n, t in items:
        if _indent(t) != width:
            raise FrontmatterError(f"line {n}: nesting deeper than one level is not supported")
        match = _KEY.match(t.strip())
        if not match:
            raise FrontmatterError(f'line {n}: expected "key: value", got {t.strip()[:40]!r}')
        mapping[match.group(1)] = _scalar(match.group(2) or "", n)
    return mapping
