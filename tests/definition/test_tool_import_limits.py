"""A tool file that blocks at import is skipped after a time limit and named, so ``start``,
``info`` and ``invoke`` go on; what a tool file prints at import never reaches stdout."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import AgentFactory, RunCli
from tests.serving.serving_proc import ServerProcess, get

pytestmark = pytest.mark.slow

BLOCKS = "import time\n\ntime.sleep(600)  # a network call that never answers\n"
LOUD = '''from fastagent_cli import tool

print("loading the loud tool")


@tool
def loud(text: str) -> str:
    """Echo, loudly."""
    return text.upper()
'''
BLOCKED = (
    "tools/blocks.py: its import did not finish within 10 s (does it wait on something at import time? "
    "move that into the tool's function)"
)


def test_info_json_names_the_blocked_file_and_keeps_stdout_json(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent({"tools/blocks.py": BLOCKS, "tools/loud.py": LOUD})
    begun = time.monotonic()
    done = run_cli("info", "--json", str(agent), timeout=40)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - begun < 30
    report = json.loads(done.stdout)  # the import-time print went to stderr
    assert "loading the loud tool" in done.stderr
    assert report["toolFailures"] == [{"source": "tools/blocks.py", "error": BLOCKED.split(": ", 1)[1]}]
    assert "loud" in [t["name"] for t in report["tools"]]


def test_invoke_goes_on_without_the_blocked_tool(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"tools/blocks.py": BLOCKS})
    done = run_cli("invoke", "hello", str(agent), timeout=40)
    assert done.returncode == 0, done.stderr
    assert "echo: hello" in done.stdout
    assert "tools/blocks.py" in done.stderr and "did not finish within 10 s" in done.stderr


async def test_start_serves_health_and_reports_the_file(make_agent: AgentFactory) -> None:
    agent = make_agent({"tools/blocks.py": BLOCKS})
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        port = await server.port(within=40)
        assert await get(port) == (200, "ok\n")
    assert BLOCKED in server.text
