"""Write the chosen model into ``fastagent.toml`` by editing its text, so comments and layout stay.

In the root table (before the first ``[table]`` header), in this order:

1. an active ``model = "..."`` line gets the new value (its trailing comment kept);
2. else the first commented ``# model = ...`` line (the ``init`` template's placeholder) is
   uncommented with the new value;
3. else ``model = "..."`` is inserted at the top of the root table: after the file's header
   comment paragraph, or as the first line.

The result is parsed again and must equal the old document plus the new model; when it does not
(a hand-shaped file the text rules do not understand) nothing is written and the caller prints a
hint instead.
"""

from __future__ import annotations

import json
import re
import stat
import tomllib
from pathlib import Path

from fastagent_cli.state.atomic import atomic_write_text

__all__ = ["set_model_text", "write_model"]

_STRING = r"""(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_KEY = r"""(?:model|"model"|'model')"""
_TABLE = re.compile(r"^\s*\[")
_ANY_ACTIVE = re.compile(rf"^\s*{_KEY}\s*=")
_ACTIVE = re.compile(rf"^(?P<lead>\s*){_KEY}\s*=\s*{_STRING}(?P<rest>\s*(?:#.*)?)$")
_COMMENTED = re.compile(rf"^\s*#+\s*{_KEY}\s*=\s*(?P<value>{_STRING})?(?P<rest>.*)$")
_COMMENTED_TABLE = re.compile(r"^\s*#+\s*\[")
_TRAILING_COMMENT = re.compile(r"^\s+#.*$")


def _split(line: str) -> tuple[str, str]:
    body = line.rstrip("\r\n")
    return body, line[len(body) :]


def set_model_text(text: str, spec: str) -> str | None:
    """``text`` with ``model = "<spec>"`` set, or ``None`` when it cannot be done safely."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    value = json.dumps(spec, ensure_ascii=False)  # a valid TOML basic string
    root_end = next((i for i, line in enumerate(lines) if _TABLE.match(line)), len(lines))
    edited = _replace_active(lines, root_end, value)
    if edited is None:
        return None
    if not edited:
        edited = _uncomment(lines, root_end, value) or _insert(lines, value, newline)
    new = "".join(lines)
    return new if _same_except_model(text, new, spec) else None


def _replace_active(lines: list[str], root_end: int, value: str) -> bool | None:
    for i in range(root_end):
        if not _ANY_ACTIVE.match(lines[i]):
            continue
        body, eol = _split(lines[i])
        match = _ACTIVE.match(body)
        if match is None:
            return None  # a value these rules do not understand (multi-line string, ...)
        lines[i] = f"{match['lead']}model = {value}{match['rest']}{eol}"
        return True
    return False


def _uncomment(lines: list[str], root_end: int, value: str) -> bool:
    for i in range(root_end):
        if _COMMENTED_TABLE.match(lines[i]):
            return False  # a commented-out table: its keys are not root keys
        body, eol = _split(lines[i])
        match = _COMMENTED.match(body)
        if match is None:
            continue
        rest = match["rest"] if match["value"] and _TRAILING_COMMENT.match(match["rest"]) else ""
        lines[i] = f"model = {value}{rest}{eol}"
        return True
    return False


def _insert(lines: list[str], value: str, newline: str) -> bool:
    header = 0
    while header < len(lines) and lines[header].lstrip().startswith("#"):
        header += 1
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += newline
    if header == len(lines) and header:  # only comments: append below them
        lines.extend([newline, f"model = {value}{newline}"])
        return True
    at = header + 1 if header and not lines[header].strip() else 0
    block = [f"model = {value}{newline}"]
    if at < len(lines) and lines[at].strip():
        block.append(newline)
    lines[at:at] = block
    return True


def _same_except_model(old: str, new: str, spec: str) -> bool:
    try:
        before = tomllib.loads(old)
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        return False
    if after.pop("model", None) != spec:
        return False
    before.pop("model", None)
    return before == after


def write_model(path: Path, spec: str) -> bool:
    """Set the model in the config file at ``path``; ``False`` (nothing written) when unsafe."""
    target = path.resolve()
    with open(target, encoding="utf-8", newline="") as fh:
        text = fh.read()
    new = set_model_text(text, spec)
    if new is None:
        return False
    atomic_write_text(target, new, mode=stat.S_IMODE(target.stat().st_mode))
    return True
