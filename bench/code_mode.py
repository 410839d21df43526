"""Code mode overhead (prints figures; not a test).

    .venv/bin/python bench/code_mode.py [--rounds 40] [--calls 200] [--repeat 7]

A directory agent with the real MCP stdio test server (``tests/tools/mcp/mcp_test_server.py``),
its own ``tools/noop.py``, and a scripted model that asks for exactly the tool calls below, run
through the engine (``agent.invoke``), once with ``code_mode`` off and once on:

* ``run_code`` per call: a turn of ``--rounds`` model rounds, each one ``run_code("1 + 1")``,
  against the same turn where each round calls the native ``noop`` tool; the difference per
  round is what a ``run_code`` call costs over a plain tool call (sandbox feed, result JSON,
  the larger tool description);
* first ``run_code`` of a process: worker pool start and session checkout;
* nested MCP call: one ``run_code`` making ``--calls`` sequential ``demo__add`` calls, per call,
  against the same MCP call made directly (``tool.execute`` on the same server process, what a
  native call costs the host); and the same calls gathered (``asyncio.gather``) per call.

Every ``run_code`` result is checked (an error, such as the nested-call limit, stops the bench:
it would time a snippet that did less work). The coded agent's ``[code_mode]`` allows
``--calls`` nested calls per snippet. Each figure is printed as the best and the median of
``--repeat`` interleaved runs; the overheads are taken from the best runs (the machine is shared:
the best run is the one least disturbed). The model is the in-process scripted one: it costs both
sides the same and the figures are differences, which an HTTP model's own jitter would swamp.
Targets on the 2-core dev machine: <= 5 ms per run_code call over a native call, <= 1 ms per
nested MCP call over a direct one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = ROOT / "tests" / "tools" / "mcp" / "mcp_test_server.py"
MODEL = """
import json
import os


def reply(request):
    plan = json.loads(os.environ["BENCH_PLAN"])
    if request.round < plan["rounds"]:
        return {"toolCalls": [{"name": plan["tool"], "args": plan["args"]}]}
    return "done"
"""
NOOP = '''
from fastagent_cli.tools.define import tool


@tool
def noop() -> str:
    """Do nothing."""
    return "2"
'''


def make_agent(root: Path, name: str, code_mode: bool, calls: int) -> Path:
    agent = root / name
    (agent / "tools").mkdir(parents=True)
    (agent / "model.py").write_text(MODEL)
    (agent / "tools" / "noop.py").write_text(NOOP)
    sandbox = (
        f"[code_mode]\nmax_nested_calls = {calls}\nmax_suspensions = {100 * calls}\n" if code_mode else ""
    )
    (agent / "fastagent.toml").write_text(
        'model = "scripted/model:reply"\ncoding_tools = false\n'
        f"{sandbox}"
        "[mcp_servers.demo]\n"
        f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVER))}]\n"
    )
    return agent


async def timed(step: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await step()
    return time.perf_counter() - started


def figure(label: str, samples: list[float], scale: float, unit: str) -> float:
    """Print ``best (median)`` of ``samples`` times ``scale``; return the best."""
    best, median = min(samples) * scale, statistics.median(samples) * scale
    print(f"{label:<50}{best:8.2f} {unit}  (median {median:.2f})")
    return best


async def main() -> None:
    import os

    from fastagent_cli.assembly import OpenedAgent, open_agent_dir
    from fastagent_cli.contract import Completed, Prompt, Scope, ToolEnded
    from fastagent_cli.tools.base import ToolContext

    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rounds, calls = args.rounds, args.calls

    with tempfile.TemporaryDirectory() as tmp:
        native = open_agent_dir(make_agent(Path(tmp), "native", False, calls))
        coded = open_agent_dir(make_agent(Path(tmp), "coded", True, calls))
        turns = 0

        async def turn(opened: OpenedAgent, plan: dict[str, object]) -> None:
            nonlocal turns
            turns += 1
            os.environ["BENCH_PLAN"] = json.dumps(plan)
            events = [e async for e in opened.agent.invoke(Scope(f"bench-{turns}"), Prompt("go"))]
            assert isinstance(events[-1], Completed), events[-1]
            results = [e for e in events if isinstance(e, ToolEnded)]
            assert len(results) == plan["rounds"], (len(results), plan)
            failed = [e.content for e in results if e.is_error]
            assert not failed, f"a tool call failed, the figures would be wrong: {failed[0]}"

        try:
            await turn(native, {"rounds": 1, "tool": "demo__add", "args": {"a": 1, "b": 1}})  # start MCP
            await coded.surface.live()  # its MCP server too: the first run_code below pays the pool alone
            one = {"rounds": 1, "tool": "run_code", "args": {"code": "1"}}
            first = await timed(lambda: turn(coded, one))
            warm = [await timed(lambda: turn(coded, one)) for _ in range(args.repeat)]

            native_t, code_t = [], []
            noop_plan = {"rounds": rounds, "tool": "noop", "args": {}}
            code_plan = {"rounds": rounds, "tool": "run_code", "args": {"code": "1 + 1"}}
            for _ in range(args.repeat):  # interleaved, so drift hits both sides alike
                native_t.append(await timed(lambda: turn(native, noop_plan)))
                code_t.append(await timed(lambda: turn(coded, code_plan)))

            # the same server process the sandbox calls: only the path differs
            add = next(t for t in coded.surface.live.mounted() if t.name == "demo__add")

            async def direct() -> None:
                for i in range(calls):
                    result = await add.execute({"a": i, "b": 1}, ToolContext(cwd=tmp))
                    assert not result.is_error, result.content

            loop = f"total = 0\nfor i in range({calls}):\n    total += demo__add(a=i, b=1)['result']\ntotal"
            gathered = (
                "import asyncio\n"
                f"rs = await asyncio.gather(*[demo__add(a=i, b=1) for i in range({calls})])\n"
                "sum(r['result'] for r in rs)"
            )
            empty = {"rounds": 1, "tool": "run_code", "args": {"code": "0"}}
            plan = {"rounds": 1, "tool": "run_code", "args": {"code": loop}}
            plan_g = {"rounds": 1, "tool": "run_code", "args": {"code": gathered}}
            direct_t, nested_t, gather_t, empty_t = [], [], [], []
            for _ in range(args.repeat):  # interleaved, so drift hits both sides alike
                direct_t.append(await timed(direct))
                empty_t.append(await timed(lambda: turn(coded, empty)))
                nested_t.append(await timed(lambda: turn(coded, plan)))
                gather_t.append(await timed(lambda: turn(coded, plan_g)))
        finally:
            await native.aclose()
            await coded.aclose()

    ms = 1000.0
    print(f"first run_code turn of a process (pool start, checkout): {first * ms:.1f} ms")
    figure("a later one-run_code turn:", warm, ms, "ms")
    per_native = figure(f"per round, native tool call ({rounds} rounds):", native_t, ms / rounds, "ms")
    per_code = figure(f"per round, run_code call ({rounds} rounds):", code_t, ms / rounds, "ms")
    print(f"{'run_code overhead per call:':<50}{per_code - per_native:8.2f} ms")
    base = min(empty_t)
    per_direct = figure(f"MCP call made directly ({calls} in a row):", direct_t, ms / calls, "ms per call")
    nested = [t - base for t in nested_t]
    per_nested = figure("MCP call nested in run_code (sequential):", nested, ms / calls, "ms per call")
    print(f"{'nested overhead per MCP call:':<50}{per_nested - per_direct:8.2f} ms")
    figure("MCP calls nested and gathered:", [t - base for t in gather_t], ms / calls, "ms per call")


if __name__ == "__main__":
    asyncio.run(main())
