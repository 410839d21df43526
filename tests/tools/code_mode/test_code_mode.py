"""Code mode end to end: a directory agent with the real MCP stdio test server and its own
``tools/*.py``, ``code_mode`` on, a scripted model that writes ``run_code`` snippets. The sandbox
is the real pydantic-monty worker pool."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import OpenedAgent, open_agent_dir
from fastagent_cli.contract import AgentEvent, Completed, Scope, Text, ToolEnded, ToolStarted
from tests.conformance.suite import drain
from tests.conftest import AgentFactory

SERVER = str(Path(__file__).parents[1] / "mcp" / "mcp_test_server.py")

# The model runs the snippets listed for the prompt, one run_code call per model request, then
# answers with the last result. It also records the tools it was offered.
MODEL = """
import json
from pathlib import Path

def reply(request):
    # this module is imported once per process: find this agent from the prompt's last line
    HERE = Path(request.system.rsplit("Current working directory: ", 1)[1].strip())
    snippets = json.loads((HERE / "snippets.json").read_text())[request.last_user_text]
    offered = [{"name": t.name, "description": t.description} for t in request.tools]
    (HERE / "offered.json").write_text(json.dumps(offered))
    if request.round < len(snippets):
        return {"toolCalls": [{"name": "run_code", "args": snippets[request.round]}]}
    last = request.messages[-1]
    return "result: " + "".join(b.get("text", "") for b in last["content"])
"""

SHOUT = '''
from fastagent_cli.tools.define import tool


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()
'''

INVENTORY = '''
from fastagent_cli.tools.define import tool


@tool
def inventory(shelf: int) -> dict:
    """What is on a shelf (a typed result).

    Args:
        shelf: The shelf number.
    """
    return {"shelf": shelf, "items": ["tea", "rice"][: shelf]}
'''

Run = Callable[..., Any]


@pytest.fixture
async def agent(make_agent: AgentFactory) -> AsyncIterator[tuple[Path, OpenedAgent]]:
    config = (
        "coding_tools = false\n"
        "[code_mode]\n"
        "time_limit = 3\n"
        "memory_mb = 16\n"
        "max_nested_calls = 20\n"
        "print_limit_kb = 16\n"
        "[mcp_servers.demo]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(SERVER)}]\n"
    )
    root = make_agent(
        {
            "code_model.py": MODEL,
            "tools/shout.py": SHOUT,
            "tools/inventory.py": INVENTORY,
            "snippets.json": "{}",
        },
        model="scripted/code_model:reply",  # a module name of its own: imported modules are cached
        config=config,
    )
    opened = open_agent_dir(root)
    try:
        yield root, opened
    finally:
        await opened.aclose()


async def run(
    agent: tuple[Path, OpenedAgent], prompt: str, *snippets: str | dict[str, Any], session: str = "s"
) -> tuple[list[ToolEnded], str]:
    """Run ``snippets`` as the run_code calls of one turn; the tool results and the answer."""
    root, opened = agent
    table = json.loads((root / "snippets.json").read_text())
    table[prompt] = [s if isinstance(s, dict) else {"code": s} for s in snippets]
    (root / "snippets.json").write_text(json.dumps(table))
    events: list[AgentEvent] = await drain(opened.agent.invoke(Scope(session), prompt))
    assert isinstance(events[-1], Completed), events[-1]
    assert all(e.name == "run_code" for e in events if isinstance(e, ToolStarted))
    return [e for e in events if isinstance(e, ToolEnded)], "".join(
        e.delta for e in events if isinstance(e, Text)
    )


def text(ended: ToolEnded) -> str:
    return "".join(b["text"] for b in ended.content if b["type"] == "text")


FAN_OUT = """
import asyncio
items = demo__catalog()["items"]
cheap = [item for item in items if item["price"] < 25]
prices = await asyncio.gather(*[demo__price(item_id=item["id"]) for item in cheap])
{"ids": [item["id"] for item in cheap], "total": sum(p["result"] for p in prices)}
"""


async def test_one_run_code_fans_out_to_several_mcp_calls_and_filters(
    agent: tuple[Path, OpenedAgent],
) -> None:
    ended, answer = await run(agent, "fan out", FAN_OUT)
    assert not ended[0].is_error, text(ended[0])
    assert json.loads(text(ended[0])) == {"ids": ["fruit-1", "tools-1", "books-1"], "total": 46.5}
    assert answer == 'result: {"ids": ["fruit-1", "tools-1", "books-1"], "total": 46.5}'

    root, opened = agent
    offered = json.loads((root / "offered.json").read_text())
    assert [t["name"] for t in offered] == ["run_code"]  # the MCP and own tools are behind it
    description = offered[0]["description"]
    # typed results (an MCP output schema, a typed tool's return annotation) type the function
    assert "def demo__price(*, item_id: str) -> dict[str, Any]:" in description
    assert 'Returns:\n        {"result": float}' in description
    assert "def demo__catalog(*, category: str | None = None) -> dict[str, Any]:" in description
    assert "def inventory(*, shelf: int) -> dict[str, Any]:" in description
    assert "shelf: The shelf number." in description
    assert "def shout(*, text: str) -> Any:" in description  # a text result
    # MCP annotations that say a tool is not read-only warn in its docstring
    crash = description.split("def demo__crash", 1)[1].split("def ", 1)[0]
    assert "WARNING: Mutating and destructive" in crash
    add = description.split("def demo__add", 1)[1].split("def ", 1)[0]
    assert "WARNING" not in add
    assert "Helpers in scope" in description and "read_resource(uri, server=None)" in description


async def test_calls_are_logged_in_the_details(agent: tuple[Path, OpenedAgent]) -> None:
    root, opened = agent
    (root / "snippets.json").write_text(json.dumps({"log": [{"code": FAN_OUT}]}))
    events = await drain(opened.agent.invoke(Scope("d"), "log"))
    session = await opened.sessions.read("d")
    assert session is not None and isinstance(events[-1], Completed)
    result = next(m for m in session.messages if m["role"] == "toolResult")
    calls = result["details"]["calls"]  # type: ignore[typeddict-item]
    assert sorted(c["tool"] for c in calls) == ["demo__catalog", "demo__price", "demo__price", "demo__price"]
    assert not any(c["isError"] for c in calls)


async def test_a_tool_error_raises_at_the_call_site_and_can_be_caught(
    agent: tuple[Path, OpenedAgent],
) -> None:
    code = (
        "try:\n"
        "    demo__price(item_id='nope-9')\n"
        "    outcome = 'no error'\n"
        "except RuntimeError as exc:\n"
        "    outcome = 'caught: ' + str(exc)\n"
        "outcome"
    )
    ended, _ = await run(agent, "catch", code)
    assert not ended[0].is_error
    assert text(ended[0]).startswith("caught: demo__price failed:") and "unknown item nope-9" in text(
        ended[0]
    )

    uncaught, _ = await run(agent, "uncaught", "demo__price(item_id='nope-9')")
    assert uncaught[0].is_error and "unknown item nope-9" in text(uncaught[0])
    assert "1 function call(s) ran before the error" in text(uncaught[0])


async def test_syntax_error_time_limit_and_memory_limit_are_answers_and_the_host_keeps_serving(
    agent: tuple[Path, OpenedAgent],
) -> None:
    ended, _ = await run(
        agent,
        "limits",
        "kept = 'still here'",
        "def broken(:\n    pass",
        "kept",
        "while True:\n    pass",
        "kept",
        {"code": "blob = []\nwhile True:\n    blob.append('x' * 10000)"},
        "1 + 1",
    )
    results = [(e.is_error, text(e)) for e in ended]
    assert results[0] == (False, "{}")
    assert results[1][0] and "SyntaxError" in results[1][1]
    assert results[2] == (False, "still here")  # a syntax error leaves the sandbox as it was
    assert results[3][0] and "TimeoutError" in results[3][1] and "hit its time limit" in results[3][1]
    assert results[4][0] and "NameError" in results[4][1]  # the limit reset the sandbox
    assert results[5][0] and "MemoryError" in results[5][1] and "hit its memory limit" in results[5][1]
    assert results[6] == (False, "2")

    # the same process answers the next turn
    again, answer = await run(agent, "after", "demo__catalog(category='books')['items'][0]['id']")
    assert text(again[0]) == "books-1" and answer == "result: books-1"


async def test_state_lives_for_the_run_and_restart_forgets_it(agent: tuple[Path, OpenedAgent]) -> None:
    ended, _ = await run(
        agent, "state", "x = 41", "x + 1", {"code": "x", "restart": True}, "print('hello')\nNone"
    )
    results = [(e.is_error, text(e)) for e in ended]
    assert results[0] == (False, "{}")
    assert results[1] == (False, "42")
    assert results[2][0] and "NameError" in results[2][1]
    assert results[3] == (False, json.dumps({"output": "hello\n"}))
    # a new run is a new sandbox
    later, _ = await run(agent, "later", "x")
    assert later[0].is_error and "NameError" in text(later[0])


async def test_the_agents_own_tools_are_functions_too(agent: tuple[Path, OpenedAgent]) -> None:
    ended, _ = await run(
        agent,
        "own",
        "print(shout(text='hi'))\ninventory(shelf=1)",
        "try:\n    shout(text=1, loud=True)\nexcept TypeError as exc:\n    problem = str(exc)\nproblem",
    )
    assert json.loads(text(ended[0])) == {"output": "HI\n", "result": {"shelf": 1, "items": ["tea"]}}
    assert text(ended[1]) == "shout() got an unexpected keyword argument 'loud'"


async def test_the_nested_call_limit_and_the_print_limit(agent: tuple[Path, OpenedAgent]) -> None:
    loop = "total = 0\nfor i in range(25):\n    total += demo__add(a=i, b=1)['result']\ntotal"
    gathered = "import asyncio\nrs = await asyncio.gather(*[demo__add(a=i, b=1) for i in range(25)])\nlen(rs)"
    ended, _ = await run(
        agent, "budget", loop, gathered, "sum([demo__add(a=i, b=0)['result'] for i in range(20)])"
    )
    results = [(e.is_error, text(e)) for e in ended]
    assert results[0][0] and "may call functions at most 20 times" in results[0][1]
    assert "20 function call(s) ran before the error" in results[0][1]
    assert "- demo__add ×20" in results[0][1]  # one line for a run of the same call
    assert results[1][0] and "may call functions at most 20 times" in results[1][1]
    assert results[2] == (False, str(sum(range(20))))  # the limit is per snippet

    printed, _ = await run(
        agent,
        "chatty",
        "kept = 'still here'",
        "for i in range(2000):\n    print('x' * 100)\n'done'",
        "kept",
        "print('short')\nkept",
    )
    results = [(e.is_error, text(e)) for e in printed]
    assert results[1][0] and "printed more than 16 KiB, the print capture limit" in results[1][1]
    assert "hit its memory limit" not in results[1][1]
    assert results[2] == (False, "still here")  # the cap is not the heap's: the sandbox goes on
    assert results[3] == (False, json.dumps({"output": "short\n", "result": "still here"}))


HELPERS = """
rows = demo__catalog()
{
    "n": len(items(rows)),
    "names": names(rows)[:2],
    "by": count_by(rows, "category"),
    "first": dig(rows, "items.0.id"),
    "missing": dig(rows, "items.99.id", "none"),
    "json": to_json(dig(rows, "items.0")),
}
"""


async def test_the_helpers_are_in_scope_after_a_restart_and_a_reset(agent: tuple[Path, OpenedAgent]) -> None:
    ended, _ = await run(
        agent,
        "helpers",
        HELPERS,
        {"code": "count_by([3, 4, 5], lambda n: n % 2)", "restart": True},
        "while True:\n    pass",
        "names([{'title': 'a'}, {'id': 7}])",
    )
    results = [(e.is_error, text(e)) for e in ended]
    assert not results[0][0], results[0][1]
    value = json.loads(results[0][1])
    assert value["n"] == 9 and value["names"] == ["fruit-1", "fruit-2"]
    assert value["by"] == {"fruit": 3, "tools": 3, "books": 3}
    assert value["first"] == "fruit-1" and value["missing"] == "none"
    assert json.loads(value["json"]) == {"id": "fruit-1", "category": "fruit", "price": 15}
    assert results[1] == (False, json.dumps({"1": 2, "0": 1}))
    assert results[2][0] and "hit its time limit" in results[2][1]
    assert results[3] == (False, json.dumps(["a", 7]))  # defined again in the fresh sandbox
    # the helpers ran in the sandbox: only the one tool call is in the details
    root, opened = agent
    session = await opened.sessions.read("s")
    assert session is not None
    first = next(m for m in session.messages if m["role"] == "toolResult")
    assert [c["tool"] for c in first["details"]["calls"]] == ["demo__catalog"]  # type: ignore[typeddict-item]


async def test_resources_are_listed_and_read_from_the_sandbox(
    agent: tuple[Path, OpenedAgent], tmp_path: Path
) -> None:
    ended, _ = await run(
        agent,
        "resources",
        "list_resources()",
        "read_resource('note://current')",
        "read_resource(uri='note://current', server='demo')",
        "read_resource('note://nope')",
        "list_resources(server='elsewhere')",
        "read_resource(5)",
        "try:\n    read_resource()\nexcept TypeError as exc:\n    why = str(exc)\nwhy",
    )
    results = [(e.is_error, text(e)) for e in ended]
    assert json.loads(results[0][1]) == [
        {
            "server": "demo",
            "uri": "note://current",
            "name": "note",
            "description": "The current note.",
            "mimeType": "text/plain",
        }
    ]
    assert results[1] == (False, "(no note)") and results[2] == (False, "(no note)")
    assert results[3][0] and "read_resource('note://nope') failed: MCP server demo:" in results[3][1]
    assert results[4][0] and "no MCP server named 'elsewhere' (servers: demo)" in results[4][1]
    assert results[5][0] and "argument 'uri' must be a string, not int" in results[5][1]
    assert results[6] == (False, "read_resource() missing required argument 'uri'")


class _Spans:
    capture_content = False

    def __init__(self) -> None:
        self.spans: list[Any] = []

    def submit(self, span: Any) -> None:
        self.spans.append(span)


async def test_nested_calls_are_spans_under_the_run_code_call(agent: tuple[Path, OpenedAgent]) -> None:
    from fastagent_cli.telemetry.spans import install

    sink = _Spans()
    install(sink)
    try:
        ended, _ = await run(agent, "traced fan out", FAN_OUT)
    finally:
        install(None)
    assert not ended[0].is_error, text(ended[0])
    by_name: dict[str, list[Any]] = {}
    for s in sink.spans:
        by_name.setdefault(s.name, []).append(s)
    [turn] = by_name["invoke_agent"]
    [outer] = by_name["execute_tool run_code"]
    nested = by_name["execute_tool demo__catalog"] + by_name["execute_tool demo__price"]
    assert outer.parent_id == turn.span_id and len(nested) == 4  # the catalog, three prices
    assert all(s.parent_id == outer.span_id and s.trace_id == turn.trace_id for s in nested)
    assert all(s.attributes["fastagent.code_mode"] is True for s in nested)
    assert {s.attributes["gen_ai.tool.name"] for s in nested} == {"demo__catalog", "demo__price"}
    assert all(outer.start_ns <= s.start_ns <= s.end_ns <= outer.end_ns for s in nested)
