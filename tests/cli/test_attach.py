"""``fastagent attach`` as a user runs it: the real ``fastagent start`` (``session_control = true``)
and the real ``fastagent attach`` in a pseudo-terminal. A line starts a run, a line typed while it
runs steers it, ``/abort`` stops another; the serve is restarted mid-attach (a new token and port
in ``control.json``) while a turn lands offline, and attach resyncs. The screen is read through a
terminal emulator (pyte): every conversation line is on it exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyte
import pytest

from tests.chat.pty_run import PtyProcess
from tests.conftest import cli_command

pytestmark = pytest.mark.slow

BOT = """
def reply(request):
    text = request.last_user_text
    if text.startswith("slow") and request.round == 0:
        return {"toolCalls": [{"name": "nap", "args": {"seconds": 30 if "long" in text else 6}}]}
    return {"text": f"You said: {text}. Round {request.round}.", "chunkDelayMs": 10, "chunkSize": 8}
"""
NAP = '''
import asyncio

from fastagent_cli import tool


@tool
async def nap(seconds: float) -> str:
    """Sleep a while."""
    await asyncio.sleep(seconds)
    return "slept"
'''
COLS, ROWS = 120, 40


def screen_lines(raw: bytes) -> list[str]:
    """What the terminal shows, scrollback included, one string per non-empty line."""
    screen = pyte.HistoryScreen(COLS, ROWS, history=100_000)
    pyte.ByteStream(screen).feed(raw)
    rows = ["".join(char.data for char in row.values()) for row in screen.history.top]
    return [line.rstrip() for line in [*rows, *screen.display] if line.strip()]


class Serve:
    """``fastagent start`` on a free port; its control.json tells when it is up."""

    def __init__(self, agent: Path, log: Path) -> None:
        self.agent = agent
        self.log = log
        self.control = agent / ".fastagent" / "control.json"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*cli_command(), "start", str(self.agent), "--port", "0", "--bind", "127.0.0.1"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + 30
        while not self.control.exists():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "the serve never wrote control.json"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(20)
        assert not self.control.exists()  # removed on a clean exit


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Serve]:
    agent = tmp_path / "agent"
    (agent / "tools").mkdir(parents=True)
    (agent / "fastagent.toml").write_text(
        'model = "scripted/bot:reply"\nsession_control = true\ncoding_tools = false\n'
    )
    (agent / "bot.py").write_text(BOT)
    (agent / "tools" / "nap.py").write_text(NAP)
    serve = Serve(agent, tmp_path / "serve.log")
    serve.start()
    try:
        yield serve
    finally:
        if serve.process is not None and serve.process.poll() is None:
            serve.process.kill()
            serve.process.wait()


def test_attach_steers_aborts_and_resyncs_across_a_restart(served: Serve, tmp_path: Path) -> None:
    term = PtyProcess([*cli_command(), "attach", "s1", str(served.agent)], cwd=tmp_path, rows=ROWS, cols=COLS)
    try:
        term.read_until("a new session, or a typo?")
        term.read_until("attached via")  # the status line: the prompt is up
        mark = len(term.text)
        term.send("hello there\r")
        term.read_until("You said: hello there. Round 0.", start=mark)

        # a typed line while the run is in its tool steers it: taken in after the tool batch
        mark = len(term.text)
        term.send("slow please\r")
        term.read_until("nap seconds=6", start=mark)
        term.send("turn left\r")
        term.read_until("steering: turn left", start=mark)
        term.read_until("You said: turn left. Round 0.", start=mark)

        # /abort stops another run
        mark = len(term.text)
        term.send("slow and long\r")
        term.read_until("nap seconds=30", start=mark)
        term.send("/abort\r")
        term.read_until("the run was aborted", start=mark)

        # the serve restarts (new token, new port) while a turn lands without it
        served.stop()
        offline = subprocess.run(
            [*cli_command(), "invoke", "--session", "s1", "while you were away", str(served.agent)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert offline.returncode == 0, offline.stderr
        served.start()
        mark = len(term.text)
        term.read_until("(the serve restarted)", start=mark, timeout=40)
        term.read_until("You said: while you were away. Round 0.", start=mark)
        mark = len(term.text)
        term.send("after the restart\r")
        term.read_until("You said: after the restart. Round 0.", start=mark)
        time.sleep(0.3)
        term.send("\x03")
        assert term.wait() == 0
    finally:
        term.close()
    lines = screen_lines(term.raw)
    conversation = [
        "› hello there",
        "You said: hello there. Round 0.",
        "› slow please",
        "› turn left",
        "You said: turn left. Round 0.",
        "› slow and long",
        "⏹ the run was aborted",
        "› while you were away",
        "You said: while you were away. Round 0.",
        "› after the restart",
        "You said: after the restart. Round 0.",
    ]
    for line in conversation:
        assert lines.count(line) == 1, f"{line!r} is shown {lines.count(line)} times:\n" + "\n".join(lines)
    positions = [lines.index(line) for line in conversation]
    assert positions == sorted(positions), "\n".join(lines)
    assert sum("✓ nap seconds=6" in line for line in lines) == 1
    assert sum("✗ nap seconds=30" in line for line in lines) == 1
    assert lines[-1] == "detached from s1"


def test_attach_without_a_serve_gives_up_after_the_startup_budget(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "fastagent.toml").write_text('model = "scripted/echo"\nsession_control = true\n')
    started = time.monotonic()
    term = PtyProcess([*cli_command(), "attach", "s1", str(agent)], cwd=tmp_path, cols=400)
    try:
        assert term.wait(40) == 1
    finally:
        term.close()
    assert time.monotonic() - started >= 14
    control = agent / ".fastagent" / "control.json"
    assert f"Error: no {control}: is `fastagent start` or `dev` running there" in term.text
    assert "(waited 15 s)" in term.text


def test_attach_usage_errors(tmp_path: Path) -> None:
    env = {**os.environ}
    env.pop("FASTAGENT_CONTROL_TOKEN", None)
    for args, message in (
        (["attach", "s1", "--url", "http://127.0.0.1:1"], "--url needs a token"),
        (["attach", "s1", "--token", "t"], "--token goes with --url"),
        (["attach", "s1", "--url", "ftp://x", "--token", "t"], "--url: not an http(s) URL"),
        (["attach", "s1", str(tmp_path)], "attach needs a terminal"),
    ):
        done = subprocess.run([*cli_command(), *args], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)


def control_state(served: Serve, session: str) -> dict[str, object]:
    import json
    import urllib.request

    doc = json.loads(served.control.read_text())
    request = urllib.request.Request(
        f"{doc['url']}/control/sessions/{session}", headers={"Authorization": f"Bearer {doc['token']}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        state: dict[str, object] = json.loads(answer.read())
    return state


def test_detaching_cancels_the_run_attach_started_and_a_wrong_token_ends_a_remote_attach(
    served: Serve, tmp_path: Path
) -> None:
    term = PtyProcess([*cli_command(), "attach", "s2", str(served.agent)], cwd=tmp_path, cols=COLS)
    try:
        term.read_until("attached via")  # the status line: the prompt is up
        term.send("slow and long\r")
        term.read_until("nap seconds=30")
        assert control_state(served, "s2")["status"] == "running"
        term.send("\x03")
        assert term.wait() == 0
    finally:
        term.close()
    assert "detached from s2; the run it started was cancelled" in screen_lines(term.raw)[-1]
    deadline = time.monotonic() + 10
    while control_state(served, "s2")["status"] != "idle":
        assert time.monotonic() < deadline, "the run went on after attach detached"
        time.sleep(0.1)

    import json

    url = json.loads(served.control.read_text())["url"]
    term = PtyProcess(
        [*cli_command(), "attach", "s2", "--url", url, "--token", "wrong"], cwd=tmp_path, cols=400
    )
    try:
        assert term.wait(30) == 1
    finally:
        term.close()
    assert "Error: the serve rejected the token" in term.text and "check --token" in term.text
