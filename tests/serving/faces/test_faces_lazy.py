"""A face costs a server that does not serve it nothing: its modules load only when it is on, and
none of them loads a protocol SDK."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import AgentFactory

PROBE = """
import asyncio, json, sys
from fastagent_cli.serving import create_agent_service

async def main():
    service = await create_agent_service(sys.argv[1])
    await service.close()

asyncio.run(main())
watched = ["fastagent_cli.serving.faces.mcp", "fastagent_cli.serving.faces.a2a", "mcp", "a2a"]
print(json.dumps([name for name in watched if name in sys.modules]))
"""


def _loaded(agent: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, agent], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def test_faces_off_load_nothing(make_agent: AgentFactory) -> None:
    assert _loaded(str(make_agent({}, name="off"))) == []


def test_the_mcp_face_loads_itself_only(make_agent: AgentFactory) -> None:
    on = make_agent({}, name="on", config="[http]\nmcp = true\n")
    assert _loaded(str(on)) == ["fastagent_cli.serving.faces.mcp"]
