"""pi's coding tools, rooted at the workspace: ``read``, ``bash``, ``edit``, ``write``.

::

    from fastagent_cli.tools.coding import coding_tools

    tools = coding_tools(["read", "bash"], workspace)

Relative paths resolve against the workspace; behaviour, limits and messages follow pi
(``shared/reference/pi-engine.md`` §2).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from fastagent_cli.tools.base import Tool
from fastagent_cli.tools.coding.bash import create_bash_tool
from fastagent_cli.tools.coding.edit import create_edit_tool
from fastagent_cli.tools.coding.read import create_read_tool
from fastagent_cli.tools.coding.write import create_write_tool

__all__ = ["CODING_TOOL_NAMES", "coding_tools"]

CODING_TOOL_NAMES = ("read", "bash", "edit", "write")

_FACTORIES: dict[str, Callable[[str], Tool]] = {
    "read": create_read_tool,
    "bash": create_bash_tool,
    "edit": create_edit_tool,
    "write": create_write_tool,
}


def coding_tools(names: Sequence[str], cwd: str | os.PathLike[str]) -> list[Tool]:
    """The named coding tools in canonical order (read, bash, edit, write), rooted at ``cwd``.

    Unknown names raise ``ValueError`` (the config layer reports them to the user first).
    """
    unknown = [n for n in names if n not in _FACTORIES]
    if unknown:
        raise ValueError(
            f"unknown coding tool(s): {', '.join(unknown)} (valid: {', '.join(CODING_TOOL_NAMES)})"
        )
    root = str(Path(cwd).resolve())
    wanted = set(names)
    return [_FACTORIES[name](root) for name in CODING_TOOL_NAMES if name in wanted]
