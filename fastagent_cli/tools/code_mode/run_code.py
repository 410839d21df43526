"""The ``run_code`` tool: the catalog, the sandbox pool and the nested calls of one agent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fastagent_cli.tools.base import Tool, ToolContext, ToolResult, text_result
from fastagent_cli.tools.code_mode.catalog import Catalog, Function, build_catalog, describe_run_code
from fastagent_cli.tools.code_mode.driver import Call
from fastagent_cli.tools.code_mode.resources import RESOURCES_DOC, ResourceReader, resource_calls
from fastagent_cli.tools.code_mode.sandbox import MontyPool, RunSandbox, monty_problem
from fastagent_cli.tools.code_mode.settings import CodeModeSettings

__all__ = ["RUN_CODE", "CodeMode", "CodeModeSettings", "sandbox_value"]

RUN_CODE = "run_code"
_SCOPE_KEY = "code_mode.sandbox"
_PARAMETERS = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "The Python snippet to run; its last expression is the result.",
        },
        "restart": {
            "type": "boolean",
            "description": "Start a fresh sandbox first (forget earlier variables). Default false.",
        },
    },
    "required": ["code"],
}


def sandbox_value(result: ToolResult) -> Any:
    """What a tool call returns inside the sandbox: MCP structured content, a typed tool's value,
    else the result's text."""
    details = result.details
    if isinstance(details, Mapping) and "structuredContent" in details:
        return details["structuredContent"]
    texts = [b["text"] for b in result.content if b["type"] == "text"]
    if details is not None and len(result.content) == 1 and texts:
        try:
            if json.loads(texts[0]) == json.loads(json.dumps(details, default=str)):
                return details
        except ValueError:
            pass
    images = sum(1 for b in result.content if b["type"] == "image")
    return "\n".join(texts + ["[image]"] * images)


def _error_text(result: ToolResult) -> str:
    return " ".join(b["text"] for b in result.content if b["type"] == "text").strip() or "failed"


class CodeMode:
    """Which tools go into the sandbox, and the ``run_code`` tool over them."""

    def __init__(
        self,
        settings: CodeModeSettings | None,
        servers: Mapping[str, bool | None],
        resources: Callable[[], ResourceReader | None] | None = None,
    ) -> None:
        self.settings = settings or CodeModeSettings(enabled=False)
        self.servers = dict(servers)
        self._resources = resources if servers else None
        self.pool = MontyPool(self.settings)
        self._problem: str | None = None
        self._checked = False
        self._key: tuple[int, ...] = ()
        self._catalog = Catalog()
        self._tool: Tool | None = None

    @property
    def wanted(self) -> bool:
        return self.settings.enabled or any(self.servers.values())

    def covers_server(self, name: str) -> bool:
        mode = self.servers.get(name)
        return self.settings.enabled if mode is None else mode

    def covers(self, tool: Tool) -> bool:
        """Whether ``tool`` is called from the sandbox rather than offered to the model."""
        source = tool.source or ""
        if source.startswith("mcp:"):
            return self.covers_server(source[4:])
        return self.settings.enabled and source.startswith(("tools/", "config.tools"))

    def apply(self, tools: Sequence[Tool]) -> list[Tool]:
        """The tools to offer the model: the native ones, then ``run_code`` when any is covered."""
        sandboxed = [t for t in tools if self.covers(t)]
        if not sandboxed or not self.available():
            return list(tools)
        key = tuple(id(t) for t in sandboxed)
        if key != self._key or self._tool is None:
            self._key = key
            self._catalog = build_catalog(sandboxed)
            self._tool = self._run_code_tool()
        return [t for t in tools if not self.covers(t) and t.name != RUN_CODE] + [self._tool]

    def available(self) -> bool:
        if not self._checked:
            self._checked = True
            self._problem = monty_problem()
        return self._problem is None

    def diagnostics(self) -> list[str]:
        found = (
            [f"code_mode is on but unavailable, the tools stay native: {self._problem}"]
            if self._problem
            else []
        )
        return found + list(self._catalog.warnings)

    @property
    def functions(self) -> Mapping[str, Function]:
        return self._catalog.functions

    def _run_code_tool(self) -> Tool:
        settings = self.settings
        description = describe_run_code(
            self._catalog,
            time_limit=settings.time_limit,
            memory_mb=settings.memory_mb,
            max_calls=settings.max_nested_calls,
            extras=[RESOURCES_DOC] if self._resources is not None else [],
        )
        functions = dict(self._catalog.functions)
        resources = self._resources

        async def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
            code = args.get("code")
            if not isinstance(code, str) or not code.strip():
                return text_result("run_code needs code: a non-empty string of Python", is_error=True)
            restart = args.get("restart", False) is True
            calls = {name: self._caller(fn, ctx) for name, fn in functions.items()}
            reader = resources() if resources is not None else None
            if reader is not None:
                calls.update(resource_calls(reader))

            def progress(log: Any) -> None:
                ctx.report({"content": [{"type": "text", "text": log.lines()}]})

            if ctx.run is not None:
                sandbox = ctx.run.get(_SCOPE_KEY, lambda: RunSandbox(self.pool), close=RunSandbox.aclose)
                return await sandbox.execute(code, calls, restart=restart, on_call=progress)
            once = RunSandbox(self.pool)  # outside a run (a direct call): a sandbox for this call
            try:
                return await once.execute(code, calls, restart=restart, on_call=progress)
            finally:
                await once.aclose()

        return Tool(RUN_CODE, description, _PARAMETERS, execute, sequential=True, source="builtin code mode")

    def _caller(self, fn: Function, ctx: ToolContext) -> Call:
        timeout = fn.tool.timeout or self.settings.call_timeout
        count = 0

        async def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            nonlocal count
            if args:
                raise TypeError(f"{fn.name}() takes keyword arguments only ({len(args)} positional given)")
            for name in kwargs:
                if name not in fn.params:
                    raise TypeError(f"{fn.name}() got an unexpected keyword argument '{name}'")
            for name in sorted(fn.required):
                if kwargs.get(name) is None:
                    raise TypeError(f"{fn.name}() missing required keyword argument '{name}'")
            arguments = {fn.params[k]: v for k, v in kwargs.items() if v is not None}
            count += 1
            nested = ToolContext(
                cwd=ctx.cwd,
                session=ctx.session,
                tools=ctx.tools,
                tool_call_id=f"{ctx.tool_call_id or RUN_CODE}.{fn.name}.{count}",
                extra=ctx.extra,
                run=ctx.run,
            )
            if ctx.approve is not None:  # a tool that asks for approval asks from code too
                denied = await ctx.approve(str(nested.tool_call_id), fn.tool, arguments)
                if denied is not None:
                    raise RuntimeError(f"{fn.name} was not run: {_error_text(denied)}")
            try:
                result = await asyncio.wait_for(fn.tool.execute(arguments, nested), timeout)
            except TimeoutError:
                raise RuntimeError(f"{fn.name} timed out after {timeout:g} seconds") from None
            if result.is_error:
                raise RuntimeError(f"{fn.name} failed: {_error_text(result)}")
            return sandbox_value(result)

        return call

    async def aclose(self) -> None:
        await self.pool.aclose()
