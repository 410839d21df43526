"""``fastagent chat --json`` driven by a real subprocess: stdin lines fed with delays are messages
as they arrive, lines arriving during a run coalesce into one follow-up turn, every event is one
JSON line, end of input waits for the running turn and exits with its status."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.conftest import AgentFactory, cli_command

MODEL = """
import asyncio
import json
import os


def turn_input(request):
    parts = []
    for message in reversed(request.messages):
        if message["role"] != "user":
            break
        content = message["content"]
        parts.append(content if isinstance(content, str) else " ".join(b.get("text", "") for b in content))
    return list(reversed(parts))


async def reply(request):
    lines = turn_input(request)
    with open(os.environ["REQUEST_LOG"], "a") as log:
        log.write(json.dumps(lines) + "\\n")
    if lines == ["slow"]:
        await asyncio.sleep(3)
    if lines[-1] == "fail":
        return {"error": {"status": 400, "message": "this line fails"}}
    return "seen: " + " + ".join(lines)
"""


class Feeder:
    def __init__(self, agent: Path, log: Path, *args: str) -> None:
        env = {**os.environ, "REQUEST_LOG": str(log)}
        self.process = subprocess.Popen(
            [*cli_command(), "chat", str(agent), "--json", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.records: list[dict[str, Any]] = []

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def read_until(self, kind: str) -> list[dict[str, Any]]:
        """Records up to and including the next one of type ``kind``."""
        assert self.process.stdout is not None
        got: list[dict[str, Any]] = []
        while True:
            raw = self.process.stdout.readline()
            assert raw, f"stdout closed; stderr: {self.process.stderr.read() if self.process.stderr else ''}"
            record = json.loads(raw)
            got.append(record)
            self.records.append(record)
            if record["type"] == kind:
                return got

    def finish(self) -> tuple[int, list[dict[str, Any]], str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()  # end of input
        out = self.process.stdout.read()
        err = self.process.stderr.read() if self.process.stderr else ""
        self.process.wait(timeout=60)
        self.process.stdout.close()
        if self.process.stderr is not None:
            self.process.stderr.close()
        rest = [json.loads(line) for line in out.splitlines()]
        self.records.extend(rest)
        return self.process.returncode, rest, err


def make(make_agent: AgentFactory) -> Path:
    return make_agent({"model.py": MODEL}, model="scripted/model:reply", config="coding_tools = false\n")


def requests(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def summary(records: list[dict[str, Any]]) -> list[str]:
    """The records with text deltas joined: what a reader of the stream sees."""
    out: list[str] = []
    for record in records:
        if record["type"] == "text":
            if out and out[-1].startswith("text:"):
                out[-1] += record["delta"]
            else:
                out.append("text:" + record["delta"])
        elif record["type"] == "user_message":
            out.append("user:" + record["text"])
        else:
            out.append(record["type"])
    return out


def test_lines_during_a_run_coalesce_into_one_follow_up_turn(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    feeder = Feeder(make(make_agent), log, "--session", "piped")
    assert feeder.read_until("session") == [{"type": "session", "session": "piped"}]
    feeder.send("slow")
    feeder.read_until("user_message")  # the first line started a run at once
    time.sleep(0.3)
    feeder.send("a")
    time.sleep(0.2)
    feeder.send("b")  # both arrive while the slow answer is being written
    first = feeder.read_until("completed")
    assert summary(first) == ["text:seen: slow", "user:a", "user:b", "text:seen: a + b", "completed"]

    time.sleep(0.5)  # idle now: the next line is a new run
    feeder.send("c")
    feeder.send("")  # blank lines are skipped
    code, rest, err = feeder.finish()  # end of input right away: the running turn is awaited
    assert code == 0, err
    assert summary(rest) == ["user:c", "text:seen: c", "completed"]
    assert requests(log) == [["slow"], ["a", "b"], ["c"]]
    assert err.startswith("[chat] ") and "session piped (NDJSON on stdout)" in err
    for record in feeder.records:  # the events are the invoke --json wire
        if record["type"] == "completed":
            assert record["data"]["stopReason"] == "stop"


def test_a_failed_run_makes_the_exit_status_1(make_agent: AgentFactory, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    feeder = Feeder(make(make_agent), log)
    session = feeder.read_until("session")[0]["session"]
    assert len(session) == 36  # a fresh session when none is named
    feeder.send("fail")
    failed = feeder.read_until("failed")
    assert failed[-1]["details"].endswith("this line fails") and failed[-1]["retryable"] is False
    feeder.send("then this")
    code, rest, _ = feeder.finish()
    assert code == 1
    assert summary(rest)[0] == "user:then this" and summary(rest)[-1] == "completed"


def test_end_of_input_with_nothing_sent_exits_0(make_agent: AgentFactory, tmp_path: Path) -> None:
    done = subprocess.run(
        [*cli_command(), "chat", str(make(make_agent)), "--json"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "REQUEST_LOG": str(tmp_path / "log")},
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["type"] for line in done.stdout.splitlines()] == ["session"]
