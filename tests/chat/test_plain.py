"""``fastagent chat`` without a terminal: the real process, prompts piped line by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.chat.harness import session_lines, write_agent
from tests.conftest import RunCli, record_files

TOOL = '''
from fastagent_cli import tool


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: 21C and sunny"
'''

pytestmark = pytest.mark.slow


@pytest.fixture
def plain_agent(tmp_path: Path) -> Path:
    return write_agent(tmp_path / "agent", {"tools/get_weather.py": TOOL})


def _sessions(agent: Path) -> list[Path]:
    return record_files(agent / ".fastagent" / "sessions")


def test_piped_prompts_answer_on_stdout_tools_on_stderr(plain_agent: Path, run_cli: RunCli) -> None:
    result = run_cli("chat", str(plain_agent), input="what is the weather?\n\nthanks\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Let me look.\nIt is **sunny** in Paris.\nHello from the script.\n"
    assert "[tool #1] get_weather city=Paris ✓" in result.stderr
    assert "session chat-" in result.stderr and "(new)" in result.stderr
    (path,) = _sessions(plain_agent)
    roles = [e["message"]["role"] for e in session_lines(path) if e["type"] == "message"]
    assert roles == ["user", "assistant", "toolResult", "assistant", "user", "assistant"]


def test_sessions_continue_across_processes_and_hosts(plain_agent: Path, run_cli: RunCli) -> None:
    first = run_cli("chat", str(plain_agent), "--session", "team:42", input="hello\n/model scripted/echo\n")
    assert first.returncode == 0, first.stderr
    again = run_cli("chat", str(plain_agent), "--session", "team:42", input="second\n")
    assert again.returncode == 0, again.stderr
    assert "resumed, 2 messages" in again.stderr and "scripted/echo" in again.stderr
    assert again.stdout == "echo: second\n"  # the per-session model override holds in a new process
    # the server's path (any other host) continues the very same session record
    served = run_cli("invoke", "third", str(plain_agent), "--session", "team:42")
    assert served.returncode == 0 and served.stdout == "echo: third\n"
    cont = run_cli("chat", str(plain_agent), "--continue", input="/session\n")
    assert cont.returncode == 0 and "team:42" in cont.stderr and "6 messages" in cont.stderr
    (path,) = _sessions(plain_agent)
    assert (
        path.name.endswith("_steam_3A42.jsonl") and path.parent.name == "agent-session"
    )  # the spec's layout
    assert all(isinstance(line, dict) for line in session_lines(path))


def test_failures_and_usage_errors(plain_agent: Path, run_cli: RunCli) -> None:
    script = {"rules": [{"match": "boom", "steps": [{"error": {"status": 400, "message": "bad"}}]}]}
    (plain_agent / "scripts" / "chat.json").write_text(json.dumps(script), encoding="utf-8")
    failed = run_cli("chat", str(plain_agent), input="boom\n")
    assert failed.returncode == 1
    assert "[fastagent] failed: scripted: 400 bad" in failed.stderr and failed.stdout == ""

    unknown = run_cli("chat", str(plain_agent), input="/nope\n")
    assert unknown.returncode == 1 and "Error: unknown command /nope" in unknown.stderr

    resume = run_cli("chat", str(plain_agent), "--resume", input="")
    assert resume.returncode == 2
    assert resume.stderr.strip() == (
        "Error: --resume picks a session interactively: use --session ID or --continue"
    )
    both = run_cli("chat", str(plain_agent), "--session", "a", "--continue", input="")
    assert both.returncode == 2 and "mutually exclusive" in both.stderr

    (plain_agent / "fastagent.toml").write_text("", encoding="utf-8")
    missing = run_cli("chat", str(plain_agent), input="hi\n")
    assert missing.returncode == 1 and missing.stderr.startswith("Error: missing model")
    assert len(missing.stderr.strip().splitlines()) == 1

    empty = run_cli("chat", str(plain_agent), "--model", "scripted/echo", input="")
    assert empty.returncode == 0 and empty.stdout == ""
