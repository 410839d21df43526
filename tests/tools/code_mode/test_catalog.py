"""The sandbox's view of the tools: Python names, signatures from JSON schemas, collisions; and
which calls in a snippet are answered with a future."""

from __future__ import annotations

from typing import Any

from fastagent_cli.tools.base import Tool, ToolContext, ToolResult, text_result
from fastagent_cli.tools.code_mode import sandbox_value
from fastagent_cli.tools.code_mode.catalog import build_catalog, describe_run_code, python_name
from fastagent_cli.tools.code_mode.driver import future_call_offsets
from fastagent_cli.tools.define import tool


async def _noop(args: Any, ctx: ToolContext) -> ToolResult:
    return text_result("")


def make(name: str, schema: dict[str, Any], description: str = "Does things.") -> Tool:
    return Tool(name, description, schema, _noop, source="mcp:x")


def test_names_become_python_identifiers() -> None:
    assert python_name("files__read-file") == "files__read_file"
    assert python_name("9lives") == "_9lives"
    assert python_name("class") == "class_"
    assert python_name("match") == "match_"
    assert python_name("a.b c") == "a_b_c"


def test_signatures_follow_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer"},
            "mode": {"enum": ["fast", "exact"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "filters": {"type": "object"},
            "score": {"type": ["number", "null"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
            "from": {"type": "string"},
        },
        "required": ["query", "from"],
    }
    catalog = build_catalog([make("search", schema, "Search the index.\nSecond line.")])
    function = catalog.functions["search"]
    assert function.signature.splitlines()[0] == (
        "def search(*, query: str, from_: str, limit: int | None = None, "
        "mode: Literal['fast', 'exact'] | None = None, tags: list[str] | None = None, "
        "filters: dict[str, Any] | None = None, score: float | None = None, "
        "either: str | bool | None = None) -> Any:"
    )
    assert "    Search the index.\n    Second line." in function.signature
    assert "    query: What to look for." in function.signature
    assert function.params["from_"] == "from" and function.required == {"query", "from_"}
    assert (
        build_catalog([make("ping", {"type": "object"})])
        .functions["ping"]
        .signature.startswith("def ping() -> Any:")
    )


def test_collisions_and_reserved_names_are_left_out_with_a_warning() -> None:
    catalog = build_catalog(
        [make("a-b", {}), make("a_b", {}), make("len", {}), make("run_code", {}), make("ok", {})]
    )
    assert list(catalog.functions) == ["a_b", "ok"]
    assert catalog.functions["a_b"].tool.name == "a-b"
    assert catalog.warnings == [
        "code mode: tool 'a_b' is left out: its function name a_b is taken by 'a-b'",
        "code mode: tool 'len' is left out: len is reserved in the sandbox",
        "code mode: tool 'run_code' is left out: run_code is reserved in the sandbox",
    ]
    text = describe_run_code(catalog, time_limit=30, memory_mb=256, max_calls=100)
    assert "30 s of sandbox time per run" in text and "def ok() -> Any:" in text


def test_which_calls_get_a_future() -> None:
    code = (
        "import asyncio\n"
        "x = f(a=1)\n"  # plain: a value
        "y = await f(a=2)\n"
        "zs = await asyncio.gather(f(a=3), *[f(a=i) for i in range(2)], g(h(a=4)))\n"
        "w = [f(a=5) for _ in range(2)]\n"  # a comprehension outside gather: values
    )
    raw = code.encode()
    found = sorted(raw[o : o + 6].decode() for o in future_call_offsets(code))
    assert found == ["asynci", "f(a=2)", "f(a=3)", "f(a=i)", "g(h(a="]  # (gather itself is no host call)
    assert future_call_offsets("def broken(:") == set()


def test_sandbox_values() -> None:
    @tool
    def typed() -> dict:
        """Typed."""
        return {"a": [1, 2]}

    mcp = ToolResult([{"type": "text", "text": "{}"}], details={"structuredContent": {"result": 3}})
    assert sandbox_value(mcp) == {"result": 3}
    plain = ToolResult(
        [{"type": "text", "text": "hello"}, {"type": "image", "data": "x", "mimeType": "image/png"}]
    )
    assert sandbox_value(plain) == "hello\n[image]"
    assert sandbox_value(ToolResult([{"type": "text", "text": '{"a": [1, 2]}'}], details={"a": [1, 2]})) == {
        "a": [1, 2]
    }
    assert typed.name == "typed"


def test_the_helpers_and_resource_functions_are_reserved() -> None:
    catalog = build_catalog([make("items", {}), make("read_resource", {}), make("dig_up", {})])
    assert list(catalog.functions) == ["dig_up"]
    assert len(catalog.warnings) == 2 and "items is reserved in the sandbox" in catalog.warnings[0]


def test_an_output_schema_types_the_function_and_sketches_what_it_returns() -> None:
    output = {
        "type": "object",
        "properties": {
            "owner": {"$ref": "#/$defs/User"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "count": {"type": "integer"},
        },
        "required": ["owner", "count"],
        "$defs": {
            "User": {"type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"]}
        },
    }
    listed = Tool("repo", "A repository.", {"type": "object"}, _noop, output_schema=output)
    rows = Tool(
        "rows",
        "Rows.",
        {"type": "object"},
        _noop,
        output_schema={"type": "array", "items": {"type": "object"}},
    )
    catalog = build_catalog([listed, rows, make("plain", {})])
    repo = catalog.functions["repo"].signature
    assert repo.startswith("def repo() -> dict[str, Any]:")
    assert '{"owner": {"login": str}, "tags": [str] (optional), "count": int}' in repo
    assert catalog.functions["rows"].signature.startswith("def rows() -> list[dict[str, Any]]:")
    assert "Returns:" not in catalog.functions["plain"].signature
    assert catalog.functions["plain"].signature.startswith("def plain() -> Any:")


def test_tools_that_are_not_read_only_carry_a_warning() -> None:
    def annotated(name: str, hints: dict[str, Any]) -> Tool:
        return Tool(name, "Does it.", {"type": "object"}, _noop, annotations=hints)

    catalog = build_catalog(
        [
            annotated("writes", {"readOnlyHint": False}),
            annotated("wipes", {"readOnlyHint": False, "destructiveHint": True}),
            annotated("reads", {"readOnlyHint": True}),
            make("unknown", {}),
        ]
    )
    signatures = {name: fn.signature for name, fn in catalog.functions.items()}
    assert "WARNING: Mutating: it changes state outside the sandbox" in signatures["writes"]
    assert "WARNING: Mutating and destructive" in signatures["wipes"]
    assert "WARNING" not in signatures["reads"] and "WARNING" not in signatures["unknown"]


def test_a_typed_tool_declares_its_output_schema() -> None:
    @tool
    def shelf(n: int) -> dict[str, list[str]]:
        """A shelf."""
        return {}

    @tool
    def said(text: str) -> str:
        """Text."""
        return text

    assert shelf.output_schema == {
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
    }
    assert said.output_schema is None
