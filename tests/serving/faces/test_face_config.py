"""``[http] mcp`` / ``a2a``: parsed strictly, and shown by ``info``."""

from __future__ import annotations

import json

from tests.conftest import AgentFactory, RunCli


def test_info_shows_the_faces_switched_on(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({}, config="[http]\nmcp = true\na2a = true\n")
    text = run_cli("info", str(agent))
    assert "faces:        mcp (MCP server on /mcp), a2a (A2A agent on /a2a)" in text.stdout
    assert json.loads(run_cli("info", str(agent), "--json").stdout)["faces"] == ["mcp", "a2a"]
    off = make_agent({}, name="off")
    assert "faces:" not in run_cli("info", str(off)).stdout
    assert json.loads(run_cli("info", str(off), "--json").stdout)["faces"] == []


def test_a_face_flag_must_be_a_boolean(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({}, config='[http]\nmcp = "yes"\n')
    done = run_cli("start", str(agent), "--port", "0")
    assert done.returncode == 1, done.stderr
    assert "mcp" in done.stderr and "Traceback" not in done.stderr
