"""A turn refused for configuration (no key, unknown script) leaves no session behind; a turn that
reached the model keeps its record from the user's message on."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.conftest import AgentFactory, RunCli, record_files


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _models(port: int) -> str:
    provider = {
        "baseUrl": f"http://127.0.0.1:{port}/v1",
        "api": "openai-completions",
        "apiKey": "$MYVLLM_API_KEY",
        "models": [{"id": "qwen3"}],
    }
    return json.dumps({"providers": {"myvllm": provider}})


def _sessions(run_cli: RunCli, agent: Path) -> list[dict[str, object]]:
    done = run_cli("sessions", "list", "--json", str(agent))
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, object]] = json.loads(done.stdout)["sessions"]
    return rows


@pytest.mark.parametrize(
    ("model", "flag", "why"),
    [
        ("myvllm/qwen3", False, "MYVLLM_API_KEY is not set"),
        ("myvllm/qwen3", True, "MYVLLM_API_KEY is not set"),
        ("scripted/nosuch", False, 'scripted model "nosuch": no script found'),
        ("scripted/nosuch", True, 'scripted model "nosuch": no script found'),
    ],
)
def test_a_refused_turn_writes_no_session(
    make_agent: AgentFactory, run_cli: RunCli, model: str, flag: bool, why: str
) -> None:
    agent = make_agent({"models.json": _models(_closed_port())}, model=None if flag else model)
    args = ["invoke", "hi", str(agent), *(["--model", model] if flag else [])]
    done = run_cli(*args)
    assert done.returncode == 1
    assert why in done.stderr
    assert record_files(agent / ".fastagent" / "sessions") == []
    assert _sessions(run_cli, agent) == []


def test_a_refused_turn_on_a_named_session_writes_nothing(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"models.json": _models(_closed_port())}, model="myvllm/qwen3")
    done = run_cli("invoke", "hi", str(agent), "--session", "s1", "--model", "myvllm/qwen3:high")
    assert done.returncode == 1
    assert record_files(agent / ".fastagent" / "sessions") == []


def test_a_turn_that_reached_the_model_keeps_its_record(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"models.json": _models(_closed_port())}, model="myvllm/qwen3")
    done = run_cli("invoke", "hello there", str(agent), env={"MYVLLM_API_KEY": "k"})
    assert done.returncode == 1  # connection refused: the request was made
    [row] = _sessions(run_cli, agent)
    assert row["preview"] == "hello there" and row["messageCount"] == 1


def test_a_session_with_history_keeps_it_when_a_later_turn_is_refused(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent({"models.json": _models(_closed_port())}, model="scripted/echo")
    assert run_cli("invoke", "first", str(agent), "--session", "s1").returncode == 0
    before = record_files(agent / ".fastagent" / "sessions")[0].read_text()
    done = run_cli("invoke", "second", str(agent), "--session", "s1", "--model", "myvllm/qwen3")
    assert done.returncode == 1 and "MYVLLM_API_KEY is not set" in done.stderr
    after = record_files(agent / ".fastagent" / "sessions")[0].read_text()
    assert after.startswith(before)  # the record is intact (the pinned model may be recorded)
