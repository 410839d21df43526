"""``invoke --approve all|none|TOOL,...``: who answers tool approvals when no person is there.

``invoke`` has no terminal to ask on (it runs in scripts and CI), so every approval request is
answered at once from this option: ``all`` approves every call, ``none`` (the default) denies
every call that needs approval, a comma list approves those tools (globs allowed: ``github__*``)
and denies the rest. A denied call's result tells the model so, and a stderr line tells the
person reading the log which option would have let it run. Nothing ever waits.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Literal

from fastagent_cli.cli.common import say
from fastagent_cli.errors import UsageError

__all__ = ["APPROVE_HELP", "approver", "parse_approve"]

APPROVE_HELP = (
    "Answer tool approvals: all, none (default: calls that need approval are denied) or "
    "TOOL,... (globs allowed) to approve those tools."
)
_NAME = re.compile(r"[A-Za-z0-9_*?\[\]-][A-Za-z0-9_*?\[\].-]*")

Answer = Callable[[str], Literal["approve", "deny"]]


def parse_approve(value: str) -> tuple[str, ...] | None:
    """``None`` for ``all``; the tool globs otherwise (``()`` for ``none``). UsageError on junk."""
    text = value.strip()
    if text == "all":
        return None
    if text == "none":
        return ()
    names = tuple(part.strip() for part in text.split(","))
    for name in names:
        if not name or not _NAME.fullmatch(name) or name in ("all", "none"):
            raise UsageError(f"--approve takes all, none or a comma list of tool names, not {value!r}")
    return names


def approver(value: str, why: str | None = None) -> Answer:
    """The answer function for ``--approve value`` (prints a stderr line for every denial;
    ``why``: the reason it gives instead of the option, for a command without one)."""
    allowed = parse_approve(value)

    def answer(tool: str) -> Literal["approve", "deny"]:
        if allowed is None or any(fnmatch.fnmatchcase(tool, pattern) for pattern in allowed):
            return "approve"
        if why is not None:
            say(f"[fastagent] {tool} needs approval and was denied ({why})")
        else:
            say(
                f"[fastagent] {tool} needs approval and was denied (--approve {value}); "
                f"pass --approve {tool} or --approve all to let it run"
            )
        return "deny"

    return answer
