"""The inline approval prompt in the real ``fastagent chat`` and ``fastagent attach``, in a
pseudo-terminal: a tool call that needs approval is asked under the run (its arguments as the tool
line shows them), ``y`` / ``n`` + a reason / ``a`` answer it through the session, several are
asked one after another, and one answered in another attach leaves this one's prompt."""

from __future__ import annotations

import getpass
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyte
import pytest

from tests.chat.harness import session_lines
from tests.chat.pty_run import PtyProcess
from tests.cli.test_attach import COLS, ROWS, Serve
from tests.conftest import cli_command, record_files

pytestmark = pytest.mark.slow

BOT = """
def reply(request):
    text = request.last_user_text
    if request.round == 0 and text.startswith("deploy"):
        envs = ["prod", "staging"] if "both" in text else ["prod"]
        return {"toolCalls": [{"name": "deploy", "args": {"env": env}} for env in envs]}
    results = []
    for message in reversed(request.messages):
        if message["role"] == "user":
            break
        if message["role"] == "toolResult":
            results.insert(0, message["content"][0]["text"])
    return {"text": "Results: " + " | ".join(results) if results else f"You said: {text}."}
"""
DEPLOY = '''
from fastagent_cli import tool


@tool(approval=True)
def deploy(env: str) -> str:
    """Deploy to an environment."""
    return f"deployed {env}"
'''


def _agent(root: Path, extra: str = "") -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "fastagent.toml").write_text(f'model = "scripted/bot:reply"\ncoding_tools = false\n{extra}')
    (root / "bot.py").write_text(BOT)
    (root / "tools" / "deploy.py").write_text(DEPLOY)
    return root


def _decisions(agent: Path) -> list[dict[str, Any]]:
    (path,) = record_files(agent / ".fastagent" / "sessions")
    return [
        e["data"]
        for e in session_lines(path)
        if e["type"] == "custom" and e["customType"] == "fastagent:approval_decision"
    ]


def _display(raw: bytes) -> list[str]:
    """What the terminal shows right now (no scrollback)."""
    screen = pyte.Screen(COLS, ROWS)
    pyte.ByteStream(screen).feed(raw)
    return [line.rstrip() for line in screen.display if line.strip()]


def _display_showing(term: PtyProcess, needle: str, within: float = 10.0) -> list[str]:
    """The screen once it shows ``needle``: a redraw can be split across reads, so one snapshot
    taken mid-redraw may miss a line the next chunk draws again."""
    deadline = time.monotonic() + within
    while True:
        shown = _display(term.raw)
        if any(needle in line for line in shown):
            return shown
        assert time.monotonic() < deadline, "\n".join(shown)
        term.pump()


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[tuple[PtyProcess, Path]]:
    agent = _agent(tmp_path / "agent")
    term = PtyProcess([*cli_command(), "chat", str(agent)], cwd=tmp_path, rows=ROWS, cols=COLS)
    try:
        term.read_until("› ")
        yield term, agent
    finally:
        term.close()


def test_chat_asks_two_pending_one_after_another_and_approves(chat: tuple[PtyProcess, Path]) -> None:
    term, agent = chat
    mark = len(term.text)
    term.send("deploy both\r")
    term.read_until("? approve deploy env=prod  (1 of 2)", start=mark)
    term.read_until("[y] yes · [n] no (then a reason) · [a] always deploy in this session", start=mark)
    term.send("y")
    term.read_until("✓ deploy env=prod approved by chat", start=mark)
    term.read_until("? approve deploy env=staging", start=mark)
    term.send("y")
    term.read_until("Results: deployed prod | deployed staging", start=mark)
    term.read_until("› ", start=len(term.text) - 200)
    term.send("\x04")
    assert term.wait() == 0
    decisions = _decisions(agent)
    assert [(d["tool"], d["args"], d["decision"], d["by"]) for d in decisions] == [
        ("deploy", {"env": "prod"}, "approved", "chat"),
        ("deploy", {"env": "staging"}, "approved", "chat"),
    ]


def test_chat_denies_with_a_reason_the_model_reads(chat: tuple[PtyProcess, Path]) -> None:
    term, agent = chat
    mark = len(term.text)
    term.send("deploy now\r")
    term.read_until("? approve deploy env=prod", start=mark)
    term.send("n")
    term.read_until("reason for the model (Enter denies, empty for none, Esc back)", start=mark)
    term.send("not on a fridaz\x7fy\r")  # Backspace edits the reason
    term.read_until("✗ deploy env=prod denied by chat: not on a friday", start=mark)
    term.read_until("Results: Denied: not on a friday", start=mark)
    term.send("\x04")
    assert term.wait() == 0
    (decision,) = _decisions(agent)
    assert (decision["decision"], decision["by"], decision["reason"]) == ("denied", "chat", "not on a friday")


def test_chat_always_approves_the_tool_for_the_rest_of_the_session(chat: tuple[PtyProcess, Path]) -> None:
    term, agent = chat
    mark = len(term.text)
    term.send("deploy both\r")
    term.read_until("? approve deploy env=prod  (1 of 2)", start=mark)
    term.send("a")  # the staging call waiting behind it is approved as well
    term.read_until("Results: deployed prod | deployed staging", start=mark)
    mark = len(term.text)
    term.send("deploy again\r")  # a later turn: not asked
    term.read_until("Results: deployed prod", start=mark)
    assert "? approve" not in term.text[mark:]
    term.send("\x04")
    assert term.wait() == 0
    decisions = _decisions(agent)
    assert [(d["args"]["env"], d["decision"], d["by"], d["reason"]) for d in decisions] == [
        ("prod", "approved", "chat", "always for this session"),
        ("staging", "approved", "chat", "always for this session"),
        ("prod", "approved", "chat", "always for this session"),
    ]


def test_attach_answers_while_another_attach_watches(tmp_path: Path) -> None:
    agent = _agent(tmp_path / "agent", "session_control = true\n")
    serve = Serve(agent, tmp_path / "serve.log")
    serve.start()
    user = getpass.getuser()
    argv = [*cli_command(), "attach", "s1", str(agent)]
    one = PtyProcess(argv, cwd=tmp_path, rows=ROWS, cols=COLS)
    two = PtyProcess(argv, cwd=tmp_path, rows=ROWS, cols=COLS)
    try:
        for term in (one, two):
            term.read_until("attached via")
        one.send("deploy both\r")
        for term in (one, two):
            term.read_until("? approve deploy env=prod  (1 of 2)")
        one.send("y")  # answered in one: gone from the other's prompt, which asks the next
        for term in (one, two):
            term.read_until(f"✓ deploy env=prod approved by attach {user}")
            term.read_until("? approve deploy env=staging")
        shown = _display_showing(two, "? approve deploy env=staging")
        assert not any("? approve deploy env=prod" in line for line in shown), "\n".join(shown)
        two.send("nstaging is frozen\r")  # the watcher answers the second one
        for term in (one, two):
            term.read_until(f"✗ deploy env=staging denied by attach {user}: staging is frozen")
            term.read_until("Results: deployed prod | Denied: staging is frozen")
        for term in (one, two):
            term.send("\x03")
            assert term.wait() == 0
    finally:
        one.close()
        two.close()
        serve.stop()
    decisions = _decisions(agent)
    assert [(d["args"]["env"], d["decision"], d["by"], d.get("reason")) for d in decisions] == [
        ("prod", "approved", f"attach {user}", None),
        ("staging", "denied", f"attach {user}", "staging is frozen"),
    ]
    log = (tmp_path / "serve.log").read_text()
    assert f"deploy approved by attach {user}" in log
