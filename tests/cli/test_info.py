"""``fastagent info``: read-only, reports problems without failing, and a stable documented JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastagent_cli.cli.info_cmd import INFO_KEYS
from tests.conftest import RunCli

DOCS = Path(__file__).resolve().parents[2] / "docs" / "info-json.md"


def _snapshot(root: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in root.rglob("*")}


def _messy_agent(root: Path) -> Path:
    agent = root / "agent"
    (agent / "tools").mkdir(parents=True)
    (agent / "skills" / "ok").mkdir(parents=True)
    (agent / "skills" / "nodesc").mkdir(parents=True)
    (agent / "channels").mkdir()
    (agent / "schedules").mkdir()
    (agent / "fastagent.toml").write_text('coding_tools = ["read"]\ntools = ["missing_mod:thing"]\n')
    (agent / "skills" / "ok" / "SKILL.md").write_text("---\nname: ok\ndescription: Fine.\n---\n")
    (agent / "skills" / "nodesc" / "SKILL.md").write_text("---\nname: nodesc\n---\n")
    (agent / "tools" / "broken.py").write_text("raise RuntimeError('boom at import')\n")
    (agent / "tools" / "read.py").write_text(
        "from fastagent_cli import tool\n\n@tool\ndef read() -> str:\n    'Mine.'\n    return 'x'\n"
    )
    (agent / "tools" / "later.py").write_text(
        "from fastagent_cli import define_tool\n\n@define_tool(deferred=True)\ndef later() -> str:\n"
        "    'Later.'\n    return 'x'\n"
    )
    (agent / "channels" / "telegram.py").write_text("# a channel\n")
    (agent / "channels" / "slack.py.disabled").write_text("# off\n")
    (agent / "schedules" / "digest.toml").write_text('cron = "0 9 * * *"\nprompt = "x"\n')
    (agent / "schedules" / "bad.toml").write_text('cron = "0 9 * * *"\n')
    return agent


def test_info_is_read_only(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _messy_agent(tmp_path)
    before = _snapshot(tmp_path)
    assert run_cli("info", str(agent)).returncode == 0
    assert run_cli("info", str(agent), "--json").returncode == 0
    assert _snapshot(tmp_path) == before  # no .fastagent/, no sessions, no __pycache__


def test_problems_are_reported_and_exit_is_zero(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _messy_agent(tmp_path)
    done = run_cli("info", str(agent), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert tuple(doc) == INFO_KEYS
    assert doc["model"] is None and doc["modelError"].startswith("missing model:")
    assert doc["toolError"].startswith('fastagent.toml tools: "missing_mod:thing": cannot import missing_mod')
    assert doc["toolFailures"] == [{"source": "tools/broken.py", "error": "RuntimeError: boom at import"}]
    assert doc["toolCollisions"] == [{"name": "read", "source": "tools/read.py", "winner": "coding tool"}]
    assert doc["tools"] == [
        {"name": "read", "source": "coding", "deferred": False},
        {"name": "later", "source": "tools/later.py", "deferred": True},
        {"name": "search_tools", "source": "builtin search_tools", "deferred": False},
    ]
    assert doc["deferredTools"] == ["later"]
    assert doc["skills"] == [
        {"name": "ok", "description": "Fine.", "path": str(agent.resolve() / "skills/ok/SKILL.md")}
    ]
    assert doc["diagnostics"] == [
        {
            "type": "warning",
            "message": "description is required",
            "path": str(agent.resolve() / "skills/nodesc/SKILL.md"),
        }
    ]
    assert doc["channels"] == ["telegram"]
    [digest] = doc["schedules"]
    assert {k: v for k, v in digest.items() if k != "next"} == {
        "name": "digest",
        "file": "schedules/digest.toml",
        "cron": "0 9 * * *",
        "tz": "UTC",
        "prompt": "x",
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT09:00:00\.000Z", digest["next"])
    assert doc["scheduleFailures"] == [
        {"file": "schedules/bad.toml", "error": 'missing "prompt" (the instruction each run starts with)'}
    ]
    assert doc["stateRoot"] == str(agent.resolve() / ".fastagent")
    assert doc["sessionsDir"] == str(agent.resolve() / ".fastagent" / "sessions")


def test_text_output(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _messy_agent(tmp_path)
    done = run_cli("info", str(agent), "--model", "scripted/echo")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0] == f"agent:        agent ({agent.resolve()})"
    assert "model:        scripted/echo (from --model)" in lines
    assert "tools:        read (coding), search_tools (builtin search_tools)" in lines
    assert "deferred:     later (activated via search_tools)" in lines
    assert "channels:     telegram" in lines
    assert any(re.fullmatch(r"schedules:    digest \(next \S+T09:00:00\.000Z\)", line) for line in lines)
    warnings = done.stderr.splitlines()
    assert '[fastagent] warn: tool "read" (tools/read.py) is shadowed by coding tool' in warnings
    assert "[fastagent] warn: tools/broken.py: RuntimeError: boom at import (skipped)" in warnings
    assert any(w.endswith("skills/nodesc/SKILL.md: description is required") for w in warnings)
    bad = 'schedules/bad.toml: missing "prompt" (the instruction each run starts with) (skipped)'
    assert f"[fastagent] warn: {bad}" in warnings


def test_mcp_servers_are_listed_and_a_broken_one_is_a_diagnostic(tmp_path: Path, run_cli: RunCli) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text(
        'coding_tools = false\n[mcp_servers.ghost]\ncommand = "/nonexistent/mcp-server"\nargs = ["--x"]\n'
    )
    done = run_cli("info", str(agent), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["mcpServers"] == [
        {
            "name": "ghost",
            "command": "/nonexistent/mcp-server",
            "args": ["--x"],
            "url": None,
            "transport": "stdio",
            "tools": [],
        }
    ]
    assert any("ghost" in d or "MCP support is unavailable" in d for d in doc["mcpDiagnostics"])


def test_json_keys_are_documented() -> None:
    documented = re.findall(r"^\| `([A-Za-z]+)` \|", DOCS.read_text(encoding="utf-8"), flags=re.M)
    assert tuple(documented) == INFO_KEYS


def test_info_names_the_state_backend(tmp_path: Path, run_cli: RunCli) -> None:
    agent = _messy_agent(tmp_path)
    files = run_cli("info", str(agent))
    assert f"backend:      files ({agent / '.fastagent'})" in files.stdout
    url = {"FASTAGENT_DATABASE_URL": "postgresql://fa:s3cret@db.example:5432/app"}
    shared = json.loads(run_cli("info", str(agent), "--json", env=url).stdout)
    assert shared["stateBackend"] == "postgres postgresql://fa@db.example:5432/app (namespace agent)"
    assert "s3cret" not in run_cli("info", str(agent), env=url).stdout  # never the password
    broken = run_cli("info", str(agent), env={"FASTAGENT_DATABASE_URL": "not-a-url"})
    assert broken.returncode == 0 and "backend:      unusable: FASTAGENT_DATABASE_URL:" in broken.stdout
