"""Code mode overhead (prints figures; not a test).

    .venv/bin/python bench/code_mode.py [--rounds 40] [--calls 200] [--repeat 5]

A directory agent with the real MCP stdio test server (``tests/tools/mcp/mcp_test_server.py``),
its own ``tools/noop.py``, and a scripted model that asks for exactly the tool calls below, run
through the engine (``agent.invoke``), once with ``code_mode`` off and once on:

* ``run_code`` per call: a turn of ``--rounds`` model rounds, each one ``run_code("1 + 1")``,
  against the same turn where each round calls the native ``noop`` tool; the difference per
  round is what a ``run_code`` call costs over a plain tool call (sandbox feed, result JSON,
  the larger tool description);
* first ``run_code`` of a process: worker pool start and session checkout;
* nested MCP call: one ``run_code`` making ``--calls`` sequential ``demo__add`` calls, per call,
  against the same MCP call made directly (``tool.execute``, what a native call costs the host);
  and the same calls gathered (``asyncio.gather``) per call.

Medians of ``--repeat`` runs. Targets on the 2-core dev machine: <= 5 ms per run_code call over
a native call, <= 1 ms per nested MCP call over a direct one.
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


def make_agent(root: Path, name: str, code_mode: bool) -> Path:
    agent = root / name
    (agent / "tools").mkdir(parents=True)
    (agent / "model.py").write_text(MODEL)
    (agent / "tools" / "noop.py").write_text(NOOP)
    (agent / "fastagent.toml").write_text(
        'model = "scripted/model:reply"\ncoding_tools = false\n'
        f"code_mode = {'true' if code_mode else 'false'}\n"
        "[mcp_servers.demo]\n"
        f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVER))}]\n"
    )
    return agent


async def timed(step: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await step()
    return time.perf_counter() - started


async def main() -> None:
    import os

    from fastagent_cli.assembly import open_agent_dir
    from fastagent_cli.contract import Completed, Scope

    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        native = open_agent_dir(make_agent(Path(tmp), "native", False))
        coded = open_agent_dir(make_agent(Path(tmp), "coded", True))
        turns = 0

        async def turn(opened: object, plan: dict[str, object]) -> None:
            nonlocal turns
            turns += 1
            os.environ["BENCH_PLAN"] = json.dumps(plan)
            events = [e async for e in opened.agent.invoke(Scope(f"bench-{turns}"), "go")]  # type: ignore[attr-defined]
            assert isinstance(events[-1], Completed), events[-1]

        try:
            await turn(native, {"rounds": 1, "tool": "demo__add", "args": {"a": 1, "b": 1}})  # start MCP
            await coded.surface.live()  # its MCP server too: the first run_code below pays the pool alone
            first = await timed(lambda: turn(coded, {"rounds": 1, "tool": "run_code", "args": {"code": "1"}}))
            warm = await timed(lambda: turn(coded, {"rounds": 1, "tool": "run_code", "args": {"code": "1"}}))

            rounds = args.rounds
            native_t, code_t = [], []
            noop_plan = {"rounds": rounds, "tool": "noop", "args": {}}
            code_plan = {"rounds": rounds, "tool": "run_code", "args": {"code": "1 + 1"}}
            for _ in range(args.repeat):
                native_t.append(await timed(lambda: turn(native, noop_plan)))
                code_t.append(await timed(lambda: turn(coded, code_plan)))
            per_native = statistics.median(native_t) / rounds * 1000
            per_code = statistics.median(code_t) / rounds * 1000

            calls = args.calls
            add = next(t for t in native.tools() if t.name == "demo__add")
            from fastagent_cli.tools.base import ToolContext

            async def direct() -> None:
                for i in range(calls):
                    await add.execute({"a": i, "b": 1}, ToolContext(cwd=tmp))

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
                direct_t.append(await timed(direct))
                gather_t.append(await timed(lambda: turn(coded, plan_g)))
            base = statistics.median(empty_t)
            per_direct = statistics.median(direct_t) / calls * 1000
            per_nested = (statistics.median(nested_t) - base) / calls * 1000
            per_gathered = (statistics.median(gather_t) - base) / calls * 1000
        finally:
            await native.aclose()
            await coded.aclose()

    print(f"first run_code turn of a process (pool start, checkout):        {first * 1000:7.1f} ms")
    print(f"a later one-run_code turn:                                      {warm * 1000:7.1f} ms")
    print(f"per round, native tool call:             {per_native:6.2f} ms")
    print(f"per round, run_code call:                {per_code:6.2f} ms")
    print(f"run_code overhead per call:              {per_code - per_native:6.2f} ms")
    print(f"MCP call made directly:                  {per_direct:6.2f} ms per call")
    print(f"MCP call nested in run_code (sequential):{per_nested:6.2f} ms per call")
    print(f"nested overhead per MCP call:            {per_nested - per_direct:6.2f} ms")
    print(f"MCP calls nested and gathered:           {per_gathered:6.2f} ms per call")


if __name__ == "__main__":
    asyncio.run(main())
