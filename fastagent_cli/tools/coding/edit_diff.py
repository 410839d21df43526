"""The diffs an ``edit`` result carries in ``details`` (for UIs and logs, never for the model):
pi's numbered display diff with four lines of context, and a standard unified patch."""

from __future__ import annotations

import difflib

__all__ = ["display_diff", "unified_patch"]


def _context(
    lines: list[str], first_number: int, width: int, leading: bool, trailing: bool, context: int
) -> list[str]:
    """Context lines of one unchanged block between (or next to) changes."""
    blank = f" {'':>{width}} ..."

    def show(offset: int, chunk: list[str]) -> list[str]:
        return [f" {first_number + offset + k:>{width}} {line}" for k, line in enumerate(chunk)]

    if leading and trailing:
        if len(lines) <= 2 * context:
            return show(0, lines)
        return [*show(0, lines[:context]), blank, *show(len(lines) - context, lines[-context:])]
    if trailing:  # context before the next change
        skipped = max(0, len(lines) - context)
        return ([blank] if skipped else []) + show(skipped, lines[skipped:])
    shown = lines[:context]  # context after the previous change
    return show(0, shown) + ([blank] if len(lines) > context else [])


def display_diff(old: str, new: str, context: int = 4) -> tuple[str, int | None]:
    """``(diff, first changed line in the new file)``; lines read ``+NN text``/``-NN text``."""
    a = old.split("\n")
    b = new.split("\n")
    width = len(str(max(len(a), len(b))))
    out: list[str] = []
    first_changed: int | None = None
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for i, (tag, a0, a1, b0, b1) in enumerate(ops):
        if tag == "equal":
            leading, trailing = i > 0, i < len(ops) - 1
            if leading or trailing:
                out.extend(_context(a[a0:a1], a0 + 1, width, leading, trailing, context))
            continue
        if first_changed is None:
            first_changed = b0 + 1
        out.extend(f"-{k + 1:>{width}} {a[k]}" for k in range(a0, a1))
        out.extend(f"+{k + 1:>{width}} {b[k]}" for k in range(b0, b1))
    return "\n".join(out), first_changed


def unified_patch(path: str, old: str, new: str, context: int = 4) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), path, path, n=context
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
