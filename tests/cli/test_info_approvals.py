"""``info`` lists what waits for a person: locally and when served beyond loopback."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import RunCli


def _agent(root: Path, toml: str) -> Path:
    agent = root / "agent"
    (agent / "tools").mkdir(parents=True)
    (agent / "fastagent.toml").write_text(toml)
    (agent / "tools" / "deploy.py").write_text(
        "from fastagent_cli import tool\n\n@tool(approval=True)\n"
        "def deploy() -> str:\n    'Deploy.'\n    return 'x'\n"
    )
    (agent / "tools" / "wipe.py").write_text(
        "from fastagent_cli import tool\n\n@tool(approval=lambda args: args['path'].startswith('/etc'))\n"
        "def wipe(path: str) -> str:\n    'Wipe.'\n    return 'x'\n"
    )
    return agent


def test_info_lists_flagged_tools_and_the_served_default(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path, 'coding_tools = ["read", "bash", "edit"]\n')
    doc = json.loads(run_cli("info", str(agent), "--json").stdout)["approvals"]
    assert doc["mode"] == "ask" and doc["timeout"] == 86400
    assert doc["local"] == [{"name": "deploy", "when": "ask"}, {"name": "wipe", "when": "ask (some calls)"}]
    served = {i["name"]: i["when"] for i in doc["served"]}
    assert served == {"bash": "ask", "edit": "ask", "deploy": "ask", "wipe": "ask (some calls)"}
    text = run_cli("info", str(agent)).stdout
    assert "approval:     deploy (ask), wipe (ask (some calls)) locally;" in text
    assert "bash (ask)" in text and "when served beyond loopback" in text


def test_configured_globs_replace_the_default_and_deny_or_allow_apply(
    tmp_path: Path, run_cli: RunCli
) -> None:
    agent = _agent(tmp_path, '[approval]\ntools = ["read", "gh__*"]\nmode = "deny"\ntimeout = 0\n')
    doc = json.loads(run_cli("info", str(agent), "--json").stdout)["approvals"]
    assert doc["timeout"] is None and doc["tools"] == ["read", "gh__*"]
    assert {i["name"]: i["when"] for i in doc["served"]} == {
        "read": "deny",
        "deploy": "deny",
        "wipe": "deny (some calls)",
    }
    assert doc["served"] == doc["local"]
    off = _agent(tmp_path / "b", '[approval]\nmode = "allow"\n')
    assert json.loads(run_cli("info", str(off), "--json").stdout)["approvals"]["served"] == []


def test_a_bad_approval_setting_is_one_line_exit_2(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _agent(tmp_path, '[approval]\nmode = "maybe"\n')
    done = run_cli("invoke", "hi", str(agent))
    assert done.returncode == 1, done.stderr  # a configuration error, as every other key's
    assert "approval.mode" in done.stderr and "Traceback" not in done.stderr
