"""``--log-format json`` / ``FASTAGENT_LOG_FORMAT=json``: one JSON object per stderr line with
time, level, logger, message and the session / turn ids of the run that logged it; a real
``fastagent start`` whose every line parses, with the API key redacted as in the text format."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastagent_cli.logging_setup import bind_log_context, configure_logging, log_context
from tests.conftest import AgentFactory
from tests.fakes.fake_providers import FakeOpenAI
from tests.serving.serving_proc import ServerProcess, invoke

KEY = "sk-live-0123456789abcdefSECRET"


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    loggers = [logging.getLogger("fastagent"), logging.getLogger("aiohttp")]
    saved = [(list(lg.handlers), lg.level, lg.propagate) for lg in loggers]
    yield
    for logger, (handlers, level, propagate) in zip(loggers, saved, strict=True):
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


def test_json_lines_carry_the_context_ids(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("debug", env={"FASTAGENT_LOG_FORMAT": "json"})
    logging.getLogger("fastagent.host").info("[host] plain")
    with log_context(session="s1", turn="r1"):
        logging.getLogger("fastagent.agent").warning("[agent] ünïcode")
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("fastagent.agent").exception("[agent] crashed")
    plain, bound, crashed = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert set(plain) == {"time", "level", "logger", "message"}
    assert (
        plain["level"] == "info"
        and plain["logger"] == "fastagent.host"
        and plain["message"] == "[host] plain"
    )
    assert plain["time"].endswith("Z") and len(plain["time"]) == len("2026-12-02T04:30:00.123Z")
    assert bound == {**bound, "level": "warn", "message": "[agent] ünïcode", "session": "s1", "turn": "r1"}
    assert crashed["level"] == "error" and "ValueError: boom" in crashed["exception"]
    assert "session" not in crashed  # the block's ids ended with it


async def test_tasks_inherit_ids_bound_in_their_parent(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", env={"FASTAGENT_LOG_FORMAT": "json"})

    async def run() -> None:
        bind_log_context(session="s2", turn="r9", trace=None)
        await asyncio.create_task(child())

    async def child() -> None:
        logging.getLogger("fastagent.agent").info("[agent] from a tool task")

    await asyncio.create_task(run())
    logging.getLogger("fastagent.agent").info("[agent] outside")
    inside, outside = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert (inside["session"], inside["turn"]) == ("s2", "r9") and "trace" not in inside
    assert "session" not in outside


def test_an_unknown_format_warns_and_keeps_text(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", env={"FASTAGENT_LOG_FORMAT": "yaml"})
    assert capsys.readouterr().err == (
        'WARN  [fastagent] FASTAGENT_LOG_FORMAT="yaml" is not one of text, json; using text\n'
    )


@pytest.mark.timeout(90)
async def test_start_logs_json_with_the_failed_turns_ids_and_no_key(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    async with FakeOpenAI() as fake:
        for _ in range(3):
            fake.enqueue_error(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}})
        models = {
            "providers": {
                "fake": {
                    "baseUrl": fake.base_url,
                    "api": "openai-completions",
                    "apiKey": KEY,
                    "models": [{"id": "m"}],
                }
            }
        }
        agent = make_agent(
            {"models.json": json.dumps(models)}, model="fake/m", config="coding_tools = false\n"
        )
        async with ServerProcess.spawn("start", str(agent), "--port", "0", "--log-format", "json") as server:
            port = await server.port()
            events = await invoke(port, "ops-1", "hi")
            assert events[-1].type == "failed"
            await server.wait_for(r"turn session=ops-1 failed")
            lines = [json.loads(line) for line in server.lines]  # every line is one JSON object
    failed = next(line for line in lines if "turn session=ops-1 failed" in line["message"])
    assert failed["level"] == "warn" and failed["logger"] == "fastagent.agent"
    assert failed["session"] == "ops-1" and failed["turn"]
    assert KEY not in json.dumps(lines)
    assert any("http host on" in line["message"] for line in lines)
