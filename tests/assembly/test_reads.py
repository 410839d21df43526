"""Assembly is the only reader of an agent directory, and a process reads it once.

Each command runs as the real process with an audit hook counting the opens of the agent's
``fastagent.toml``, ``.env`` and ``models.json`` (see ``count_reads.py``). ``invoke``, ``chat`` and
``start`` take their model from the config here (no ``--model``), the path that used to read the
directory once for the model picker and once more to open the agent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import AgentFactory

COUNTER = Path(__file__).resolve().parent / "count_reads.py"
ONCE = Counter({"fastagent.toml": 1, ".env": 1, "models.json": 1})
pytestmark = pytest.mark.slow


@pytest.fixture
def agent(make_agent: AgentFactory) -> Path:
    return make_agent(
        {
            ".env": "GREETING=hello\n",
            "models.json": json.dumps({"providers": {"openai": {"baseUrl": "http://127.0.0.1:9/v1"}}}),
        },
        config="coding_tools = false\n",
    )


def _command(agent: Path, log: Path, *args: str) -> list[str]:
    return [sys.executable, str(COUNTER), str(agent), str(log), "--", *args]


def _reads(log: Path) -> Counter[str]:
    return Counter(log.read_text(encoding="utf-8").splitlines()) if log.exists() else Counter()


def test_invoke_reads_the_directory_once(agent: Path, tmp_path: Path) -> None:
    log = tmp_path / "reads.log"
    done = subprocess.run(
        _command(agent, log, "invoke", "hi", str(agent)), capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, "echo: hi\n"), done.stderr
    assert _reads(log) == ONCE


def test_chat_reads_the_directory_once(agent: Path, tmp_path: Path) -> None:
    log = tmp_path / "reads.log"
    done = subprocess.run(
        _command(agent, log, "chat", str(agent)),
        input="first\n/model scripted/echo\nsecond\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "echo: first\necho: second\n"
    assert _reads(log) == ONCE


def test_start_reads_the_directory_once(agent: Path, tmp_path: Path) -> None:
    log = tmp_path / "reads.log"
    with subprocess.Popen(
        _command(agent, log, "start", str(agent), "--port", "0", "--bind", "127.0.0.1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "FASTAGENT_LOG_LEVEL": "info"},
    ) as server:
        try:
            assert server.stdout is not None
            seen = []
            for line in server.stdout:  # ends at EOF if the server dies
                seen.append(line)
                if "http host on" in line:
                    break
            assert any("http host on" in line for line in seen), "".join(seen)
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
    assert _reads(log) == ONCE
