"""The tools a sandbox can call, as Python functions, and the ``run_code`` description.

Each tool becomes a keyword-only function named after it (characters outside ``[A-Za-z0-9_]``
become ``_``, a leading digit gets a ``_`` prefix, a Python keyword a ``_`` suffix); a later tool
whose name collides with an earlier one (or with ``run_code`` and the sandbox's builtins) is left
out with a warning. Its signature comes from the input schema: required parameters without a
default, optional ones ``= None``; JSON types map to ``str`` / ``int`` / ``float`` / ``bool`` /
``list[...]`` / ``dict[str, Any]``, an ``enum`` to ``Literal[...]``; the docstring is the tool's
description and its parameters' descriptions.
"""

from __future__ import annotations

import builtins
import json
import keyword
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastagent_cli.tools.base import Tool
from fastagent_cli.tools.code_mode.helpers import HELPER_NAMES, HELPERS_DOC
from fastagent_cli.tools.code_mode.resources import RESOURCE_FUNCTIONS

__all__ = [
    "RESERVED",
    "Catalog",
    "Function",
    "build_catalog",
    "describe_run_code",
    "mutating_note",
    "python_name",
]

RESERVED = frozenset(
    {"run_code", "asyncio", "json", "print", *HELPER_NAMES, *RESOURCE_FUNCTIONS, *dir(builtins)}
)
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_DOC_LINES = 12
_SKETCH_FIELDS = 12


def python_name(name: str) -> str:
    """``name`` as a Python identifier."""
    safe = _UNSAFE.sub("_", name) or "_"
    if safe[0].isdigit():
        safe = f"_{safe}"
    if keyword.iskeyword(safe) or keyword.issoftkeyword(safe):
        safe = f"{safe}_"
    return safe


@dataclass(frozen=True, slots=True)
class Function:
    """One tool as the sandbox sees it."""

    name: str
    tool: Tool
    params: Mapping[str, str]
    """Python parameter name -> the schema's property name."""
    required: frozenset[str]
    signature: str


@dataclass(slots=True)
class Catalog:
    functions: dict[str, Function] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _type(schema: Any, depth: int = 0) -> str:
    if not isinstance(schema, Mapping) or depth > 4:
        return "Any"
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        values = [v for v in schema["enum"] if isinstance(v, str | int | float | bool) or v is None]
        if values:
            return f"Literal[{', '.join(repr(v) for v in values)}]"
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            members = list(dict.fromkeys(_type(s, depth + 1) for s in schema[union]))
            return "Any" if "Any" in members else " | ".join(members)
    kind = schema.get("type")
    if isinstance(kind, list):
        members = list(dict.fromkeys(_type({**schema, "type": k}, depth + 1) for k in kind))
        return "Any" if "Any" in members else " | ".join(members)
    if kind == "array":
        return f"list[{_type(schema.get('items'), depth + 1)}]"
    simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
    if kind in simple:
        return simple[kind]
    if kind == "object":
        return "dict[str, Any]"
    return "Any"


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    """``schema`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) followed."""
    for _ in range(8):
        ref = schema.get("$ref") if isinstance(schema, Mapping) else None
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        schema = target
    return schema


def _sketch(schema: Any, root: Mapping[str, Any], depth: int = 0) -> str:
    """A result's shape as Python-like text: ``{"id": str, "tags": [str], "owner": {...}}``."""
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping):
        return "Any"
    if depth > 3:
        return "..."
    kind = schema.get("type")
    properties = schema.get("properties")
    if (kind == "object" or kind is None) and isinstance(properties, Mapping) and properties:
        listed = schema.get("required")
        required: list[Any] = listed if isinstance(listed, list) else []
        fields = []
        for key, sub in list(properties.items())[:_SKETCH_FIELDS]:
            shown = _sketch(sub, root, depth + 1)
            fields.append(f"{json.dumps(str(key))}: {shown}{'' if key in required else ' (optional)'}")
        if len(properties) > _SKETCH_FIELDS:
            fields.append(f"... ({len(properties) - _SKETCH_FIELDS} more)")
        return "{" + ", ".join(fields) + "}"
    if kind == "array":
        return f"[{_sketch(schema.get('items'), root, depth + 1)}]"
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            return " | ".join(dict.fromkeys(_sketch(s, root, depth + 1) for s in schema[union]))
    return _type(schema)


def _returns(tool: Tool) -> tuple[str, str | None]:
    """The function's return annotation and the ``Returns:`` sketch (``None``: no output schema)."""
    schema = tool.output_schema
    if not isinstance(schema, Mapping) or not schema:
        return "Any", None
    resolved = _resolve(schema, schema)
    return _type(resolved), _sketch(resolved, schema)


def mutating_note(tool: Tool) -> str | None:
    """The warning for a tool whose annotations say it is not read-only (``None``: no warning)."""
    hints = tool.annotations or {}
    if hints.get("destructiveHint") is True:
        return "Mutating and destructive: it changes or deletes data; calling it again repeats that."
    if hints.get("readOnlyHint") is False:
        return "Mutating: it changes state outside the sandbox; calling it again repeats that."
    return None


def _docstring(tool: Tool, properties: Mapping[str, Any], names: Mapping[str, str]) -> str:
    lines = [line.rstrip() for line in (tool.description or tool.name).strip().splitlines()][:_DOC_LINES]
    warning = mutating_note(tool)
    if warning:
        lines = [f"WARNING: {warning}", *lines]
    args = []
    for py, key in names.items():
        about = (
            properties.get(key, {}).get("description") if isinstance(properties.get(key), Mapping) else None
        )
        if isinstance(about, str) and about.strip():
            args.append(f"    {py}: {' '.join(about.split())}")
    if args:
        lines += ["", "Args:", *args]
    returned, sketch = _returns(tool)
    if sketch is not None and sketch != returned:  # a bare "dict[str, Any]" says nothing more
        lines += ["", "Returns:", f"    {sketch}"]
    body = "\n".join(f"    {line}" if line else "" for line in lines).replace('"""', "'''")
    return f'    """\n{body}\n    """'


def _function(name: str, tool: Tool) -> Function:
    schema: Mapping[str, Any] = tool.parameters if isinstance(tool.parameters, Mapping) else {}
    raw = schema.get("properties")
    properties: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    listed = schema.get("required")
    required_keys = {k for k in listed if isinstance(k, str)} if isinstance(listed, list) else set()
    names: dict[str, str] = {}
    for key in properties:
        py = python_name(str(key))
        while py in names:
            py += "_"
        names[py] = str(key)
    ordered = sorted(names, key=lambda py: names[py] not in required_keys)  # required first
    params = []
    for py in ordered:
        annotation = _type(properties[names[py]])
        if names[py] in required_keys:
            params.append(f"{py}: {annotation}")
        else:
            nullable = annotation == "Any" or "None" in annotation.split(" | ")
            params.append(f"{py}: {annotation} = None" if nullable else f"{py}: {annotation} | None = None")
    returned, _ = _returns(tool)
    signature = f"def {name}({'*, ' if params else ''}{', '.join(params)}) -> {returned}:"
    doc = _docstring(tool, properties, {py: names[py] for py in ordered})
    required = frozenset(py for py in names if names[py] in required_keys)
    return Function(name, tool, names, required, f"{signature}\n{doc}")


def build_catalog(tools: Sequence[Tool]) -> Catalog:
    """The functions for ``tools``, in order; collisions are warnings."""
    catalog = Catalog()
    owners: dict[str, str] = {}
    for tool in tools:
        name = python_name(tool.name)
        if name in RESERVED:
            catalog.warnings.append(
                f"code mode: tool {tool.name!r} is left out: {name} is reserved in the sandbox"
            )
            continue
        if name in catalog.functions:
            catalog.warnings.append(
                f"code mode: tool {tool.name!r} is left out: "
                f"its function name {name} is taken by {owners[name]!r}"
            )
            continue
        owners[name] = tool.name
        catalog.functions[name] = _function(name, tool)
    return catalog


_RULES = """\
Run Python in a sandbox to call the functions below and work with their results in one step: \
fan out over many calls, filter, join and aggregate, and return only what matters.

The sandbox runs Monty, a subset of Python:
- Importable modules: sys, typing, asyncio, math, json, re, datetime, collections, itertools, \
functools, random. No third-party packages, no files, no network, no subprocesses. No class \
inheritance, no generators (yield).
- Call a function with keyword arguments: `rows = server__tool(arg="x")`. It returns the tool's \
structured result (dicts and lists) when it has one, else its text (parse JSON text with json.loads).
- Concurrent calls: `a, b = await asyncio.gather(f(x=1), g(y=2))` (positional awaitables only); \
`await f(x=1)` works too.
- A tool that fails raises RuntimeError with its error text at the call site: use try/except to \
carry on without it.
- The value of the last expression is the result (do not print it); print() output is returned \
too, as {{"output": ..., "result": ...}}.
- Variables, functions and imports persist across run_code calls in this run; restart: true \
starts a fresh sandbox.
- Limits: {time:g} s of sandbox time per run (shared by its snippets; waiting for tools does not \
count), {memory} MiB of memory, {calls} function calls per snippet. Hitting the time or memory \
limit resets the sandbox."""


def describe_run_code(
    catalog: Catalog, *, time_limit: float, memory_mb: int, max_calls: int, extras: Sequence[str] = ()
) -> str:
    rules = _RULES.format(time=time_limit, memory=memory_mb, calls=max_calls)
    functions = "\n\n".join(f.signature for f in catalog.functions.values()) or "# (none yet)"
    extra = "".join(f"\n\n{part}" for part in extras)
    return f"{rules}\n\n{HELPERS_DOC}{extra}\n\nFunctions:\n```python\n{functions}\n```"
