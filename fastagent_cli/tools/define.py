"""``define_tool`` / ``@tool``: a typed Python function becomes a :class:`Tool`.

::

    from fastagent_cli import tool

    @tool
    def lookup_order(order_id: str, verbose: bool = False) -> dict:
        \"\"\"Look up an order by id.

        Args:
            order_id: The order number, e.g. "A-1001".
        \"\"\"
        return db.find(order_id)

The input schema comes from pydantic: the parameters of the function (``Annotated[..., Field()]``
and Google-style ``Args:`` docstrings describe them), or a single pydantic model parameter. A
parameter annotated :class:`ToolContext` receives the context instead. Invalid arguments go back
to the model as ``Invalid arguments: <field>: <message>; ...``. Results: a string is text; a
:class:`ToolResult`, a list of content blocks or ``{"content": [...]}`` pass through; anything else
is JSON text with the value kept as ``details``. Sync functions run on the tool threads
(:mod:`fastagent_cli.tools.threads`). ``timeout`` (seconds) overrides the engine's
``[engine] tool_timeout`` for this tool; a call that runs longer ends as an error result.
``approval`` (``True``, or a predicate over the arguments) makes a call wait for a person's answer
(:mod:`fastagent_cli.tools.approval`).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, get_type_hints, overload

import pydantic

from fastagent_cli.tools.approval import ApprovalFlag
from fastagent_cli.tools.base import Tool, ToolContext, ToolResult
from fastagent_cli.tools.threads import TOOL_THREADS

__all__ = ["define_tool", "invalid_arguments_text", "tool", "wrap_result"]

_ARGS_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")


def _describe(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in lines:
        if _ARGS_SECTION.match(line):
            in_args = True
            continue
        if in_args:
            if line and not line.startswith(" ") and line.rstrip().endswith(":"):
                in_args = False
                continue
            match = re.match(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
            if match and len(line) - len(line.lstrip()) <= 8:
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}"
            continue
        summary.append(line)
    return "\n".join(summary).strip(), params


def _input_model(
    fn: Callable[..., Any], name: str, param_docs: Mapping[str, str]
) -> tuple[type[pydantic.BaseModel], str | None, str | None]:
    """The pydantic model of the arguments, the name of a whole-model parameter, and of the ctx
    parameter."""
    hints = get_type_hints(fn, include_extras=True)
    signature = inspect.signature(fn)
    ctx_param: str | None = None
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext or param.name == "ctx":
            ctx_param = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = ... if param.default is param.empty else param.default
        if param.name in param_docs and not isinstance(default, pydantic.fields.FieldInfo):
            default = pydantic.Field(default, description=param_docs[param.name])
        fields[param.name] = (annotation, default)
    if len(fields) == 1:
        ((only, (annotation, _)),) = fields.items()
        if inspect.isclass(annotation) and issubclass(annotation, pydantic.BaseModel):
            return annotation, only, ctx_param
    model = pydantic.create_model(f"{name}_arguments", **fields)
    return model, None, ctx_param


def _output_schema(fn: Callable[..., Any]) -> dict[str, Any] | None:
    """The JSON Schema of what ``fn`` returns as structured data (``None`` for text, blocks,
    results and unannotated functions)."""
    returned = get_type_hints(fn, include_extras=True).get("return", Any)
    if returned in (Any, str, None, type(None), ToolResult) or (
        inspect.isclass(returned) and issubclass(returned, ToolResult)
    ):
        return None
    try:
        schema = pydantic.TypeAdapter(returned).json_schema(mode="serialization")
    except (pydantic.PydanticUserError, TypeError, ValueError):
        return None
    schema.pop("title", None)
    return schema


def invalid_arguments_text(error: pydantic.ValidationError) -> str:
    parts = []
    for err in error.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{loc}: {err['msg']}")
    return "Invalid arguments: " + "; ".join(parts)


def wrap_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult([{"type": "text", "text": value}])
    if _is_blocks(value):
        return ToolResult(list(value))
    if isinstance(value, Mapping) and _is_blocks(value.get("content")):
        return ToolResult(
            list(value["content"]), details=value.get("details"), is_error=bool(value.get("isError"))
        )
    if isinstance(value, pydantic.BaseModel):
        value = value.model_dump(mode="json")
    text = json.dumps(value, ensure_ascii=False, default=str)
    return ToolResult([{"type": "text", "text": text}], details=value)


def _is_blocks(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(b, Mapping) and b.get("type") in ("text", "image") for b in value)
    )


@overload
def define_tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def define_tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    deferred: bool = False,
    sequential: bool = False,
    prompt_snippet: str | None = None,
    timeout: float | None = None,
    approval: ApprovalFlag = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


@overload
def define_tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    deferred: bool = False,
    sequential: bool = False,
    prompt_snippet: str | None = None,
    timeout: float | None = None,
    approval: ApprovalFlag = None,
) -> Tool: ...


def define_tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    deferred: bool = False,
    sequential: bool = False,
    prompt_snippet: str | None = None,
    timeout: float | None = None,
    approval: ApprovalFlag = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Build a :class:`Tool` from a typed function (usable bare or with options as a decorator)."""
    if timeout is not None and not timeout > 0:
        raise ValueError(f"tool timeout must be a positive number of seconds, not {timeout!r}")

    if approval is not None and not isinstance(approval, bool) and not callable(approval):
        raise ValueError(
            f"tool approval must be True, False or a predicate over the arguments, not {approval!r}"
        )

    def build(func: Callable[..., Any]) -> Tool:
        tool_name = name or func.__name__
        summary, param_docs = _describe(func)
        model, whole, ctx_param = _input_model(func, tool_name, param_docs)
        schema = model.model_json_schema()
        schema.pop("title", None)
        is_async = inspect.iscoroutinefunction(func)

        async def execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
            try:
                parsed = model.model_validate(dict(args))
            except pydantic.ValidationError as exc:
                return ToolResult([{"type": "text", "text": invalid_arguments_text(exc)}], is_error=True)
            kwargs: dict[str, Any] = (
                {whole: parsed} if whole else {k: getattr(parsed, k) for k in type(parsed).model_fields}
            )
            if ctx_param:
                kwargs[ctx_param] = ctx
            if is_async:
                value = await func(**kwargs)
            else:
                value = await TOOL_THREADS.run(tool_name, func, kwargs)
            return wrap_result(value)

        return Tool(
            name=tool_name,
            description=description or summary or tool_name,
            parameters=schema,
            execute=execute,
            deferred=deferred,
            sequential=sequential,
            prompt_snippet=prompt_snippet,
            source=getattr(func, "__module__", "python"),
            timeout=timeout,
            output_schema=_output_schema(func),
            approval=approval or None,
        )

    if fn is not None:
        return build(fn)
    return build


tool = define_tool
