"""A server without ``[http] openai = true`` never loads the face's modules (issue 31 item 4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import AgentFactory, RunCli

CODE = """
import asyncio, sys
from fastagent_cli.serving import create_agent_service

async def main():
    service = await create_agent_service(sys.argv[1])
    try:
        loaded = sorted(m for m in sys.modules if m.startswith("fastagent_cli.serving.faces."))
        print(",".join(loaded))
        print(",".join(face.name for face in service.faces))
    finally:
        await service.close()

asyncio.run(main())
"""


def loaded(agent: Path) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", CODE, str(agent)], capture_output=True, text=True, check=True)
    modules, faces = out.stdout.splitlines()
    return modules, faces


def test_the_face_loads_only_when_switched_on(make_agent: AgentFactory) -> None:
    off = make_agent(name="off")
    assert loaded(off) == ("", "")
    on = make_agent(name="on", config="[http]\nopenai = true\n")
    modules, faces = loaded(on)
    assert faces == "openai"
    assert "fastagent_cli.serving.faces.openai.routes" in modules.split(",")


def test_info_names_the_face(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent(config="[http]\nopenai = true\n")
    shown = run_cli("info", str(agent))
    assert shown.returncode == 0, shown.stderr
    assert "faces:        openai (OpenAI-compatible API on /v1)" in shown.stdout
    doc = json.loads(run_cli("info", str(agent), "--json").stdout)
    assert doc["faces"] == ["openai"]
    off = json.loads(run_cli("info", str(make_agent(name="off")), "--json").stdout)
    assert off["faces"] == []
    bad = run_cli("info", str(make_agent(name="bad", config='[http]\nopenai = "yes"\n')))
    assert bad.returncode == 1 and "http.openai: Input should be a valid boolean" in bad.stderr
