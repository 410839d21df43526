"""Code mode: the model sees one tool, ``run_code``, and calls the agent's tools from Python.

With ``code_mode = true`` (or per ``[mcp_servers.<name>] code_mode``) the MCP tools, and the
agent's own tools (``tools/*.py`` and config ``tools``), leave the model's tool list; ``run_code
{code, restart?}`` takes their place, its description listing them as Python functions (see
:mod:`.catalog`). A snippet runs in the Monty sandbox (:mod:`.sandbox`); each call it makes
pauses it while the host runs the real tool (:mod:`.driver`), so one ``run_code`` can fan out to
many calls and return only the filtered result. The built-in tools (``read``, ``bash``, ``edit``,
``write``, ``search_tools``, ``wake``) stay native.

Where the sandbox cannot run (``pydantic-monty`` is not installed, the standalone binary), the
tools stay native and :meth:`CodeMode.diagnostics` says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastagent_cli.tools.code_mode.settings import CodeModeSettings

if TYPE_CHECKING:
    from fastagent_cli.tools.code_mode.run_code import RUN_CODE, CodeMode, sandbox_value

__all__ = ["RUN_CODE", "CodeMode", "CodeModeSettings", "sandbox_value"]

_TOOL = frozenset({"RUN_CODE", "CodeMode", "sandbox_value"})


def __getattr__(name: str) -> Any:
    # Every agent's config reads the settings; only an agent with code mode on needs the tool.
    if name in _TOOL:
        from fastagent_cli.tools.code_mode import run_code

        return getattr(run_code, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
