"""``fastagent tool <name> [json-args] [dir]``: run one tool directly, no model, no session.

The tool runs with ``cwd`` = the workspace, exactly as it is mounted when the agent serves (coding
tools, config ``tools``, ``tools/``, MCP servers). Stdout gets exactly the text the model receives
(text blocks joined by newlines, an image as the note a text-only model gets); ``--json`` prints
the raw result instead, ``{"content": [...], "isError": ..., "details": ...}`` (``details`` are
for UIs and logs, never sent to the model). What the tool itself prints goes to stderr, with a
size line. Malformed JSON is a usage error (exit 2), checked before the directory is even looked
at; an unknown tool exits 1 listing the available ones; a tool that reports an error exits 1 after
printing it.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from fastagent_cli.cli.common import dir_argument
from fastagent_cli.cli.completers import tool_names
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import ToolError, UsageError

if TYPE_CHECKING:
    from fastagent_cli.assembly import AgentSurface
    from fastagent_cli.tools.base import Tool, ToolResult

__all__ = ["parse_tool_args", "tool"]


def parse_tool_args(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"invalid JSON args: {text!r} ({exc.msg} at position {exc.pos}); "
            'pass an object such as \'{"path": "README.md"}\', then the directory'
        ) from None
    if not isinstance(value, dict):
        raise UsageError(f"invalid JSON args: {text!r} is not a JSON object")
    return value


async def _run(surface: AgentSurface, name: str, args: dict[str, Any]) -> ToolResult:
    from fastagent_cli.tools.base import ToolContext, text_result

    try:
        tools: dict[str, Tool] = {t.name: t for t in surface.toolset.tools}
        chosen = tools.get(name)
        if chosen is None and surface.config.mcp_servers:
            for extra in await surface.live.mcp_tools():
                tools.setdefault(extra.name, extra)
            chosen = tools.get(name)
        if chosen is None:
            available = ", ".join(tools) or "(none)"
            raise ToolError(f'unknown tool "{name}". available: {available}')
        ctx = ToolContext(cwd=str(surface.workspace))
        try:
            return await chosen.execute(args, ctx)
        except Exception as exc:  # what the model would receive as an error result
            return text_result(str(exc) or type(exc).__name__, is_error=True)
    finally:
        await surface.live.aclose()


def _raw(result: ToolResult) -> dict[str, Any]:
    return {"content": result.content, "isError": result.is_error, "details": result.details}


@click.command(epilog=examples("tool"))
@click.argument("name", shell_complete=tool_names)
@click.argument("args", required=False, default="{}", metavar="[JSON_ARGS]")
@dir_argument
@click.option(
    "-j", "--json", "as_json", is_flag=True, help="Print the raw result (content, isError, details)."
)
def tool(name: str, args: str, directory: str, as_json: bool) -> None:
    """Run the tool NAME of the agent in DIR with JSON_ARGS (default {}), without a model.

    Prints exactly what the model would receive (--json: the raw result).
    """
    parsed = parse_tool_args(args)
    from fastagent_cli.assembly import inspect_agent_dir
    from fastagent_cli.cli.common import claim_stdout, run_async, say
    from fastagent_cli.models.openai_request import tool_result_text

    out = claim_stdout()  # a print inside the tool goes to stderr, not into its result
    surface = inspect_agent_dir(directory, strict=False)
    for warning in [c.message for c in surface.toolset.collisions] + [
        f.message for f in surface.toolset.failures
    ]:
        say(f"[fastagent] warn: {warning}")
    if surface.toolset.error:
        say(f"[fastagent] warn: {surface.toolset.error}")
    result = run_async(_run(surface, name, parsed))
    text = tool_result_text(result.content)
    images = sum(1 for b in result.content if b.get("type") == "image")
    if as_json:
        out.write(json.dumps(_raw(result), indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        out.write(text + "\n")
    out.flush()
    extra = f" + {images} image(s)" if images else ""
    say(f"[fastagent] result: {len(text)} chars ≈ {(len(text) + 3) // 4} tokens to the model{extra}")
    if result.is_error:
        say(f"[fastagent] {name} reported an error")
        sys.exit(1)
