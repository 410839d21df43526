"""The leveled stderr logger: format, FASTAGENT_LOG_LEVEL, and the per-turn trace at debug."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from fastagent_cli.logging_setup import configure_logging
from fastagent_cli.serving.invoke_http import create_invoke_handler
from tests.serving.conftest import SlowTool, StartServer, real_agent, slow_tool_script


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    loggers = [logging.getLogger("fastagent"), logging.getLogger("aiohttp")]
    saved = [(list(lg.handlers), lg.level, lg.propagate) for lg in loggers]
    yield
    for logger, (handlers, level, propagate) in zip(loggers, saved, strict=True):
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


def emit_all() -> None:
    logging.getLogger("fastagent.host").debug("[host] d")
    logging.getLogger("fastagent.channel").info("[channel] i")
    logging.getLogger("fastagent").warning("[fastagent] w")
    logging.getLogger("fastagent.agent").error("[agent] e")


def test_lines_are_level_padded_to_five_then_the_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert configure_logging("debug", env={}) == logging.DEBUG
    emit_all()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "DEBUG [host] d\nINFO  [channel] i\nWARN  [fastagent] w\nERROR [agent] e\n"


def test_the_default_level_filters(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", env={})
    emit_all()
    assert capsys.readouterr().err == "INFO  [channel] i\nWARN  [fastagent] w\nERROR [agent] e\n"


@pytest.mark.parametrize(("value", "first"), [("warn", "WARN "), ("WARNING", "WARN "), ("error", "ERROR")])
def test_the_environment_wins_over_the_default(
    capsys: pytest.CaptureFixture[str], value: str, first: str
) -> None:
    configure_logging("debug", env={"FASTAGENT_LOG_LEVEL": value})
    emit_all()
    assert capsys.readouterr().err.startswith(first)


def test_an_invalid_level_warns_and_falls_back(capsys: pytest.CaptureFixture[str]) -> None:
    assert configure_logging("info", env={"FASTAGENT_LOG_LEVEL": "loud"}) == logging.INFO
    emit_all()
    err = capsys.readouterr().err.splitlines()
    assert (
        err[0]
        == 'WARN  [fastagent] FASTAGENT_LOG_LEVEL="loud" is not one of debug, info, warn, error; using info'
    )
    assert err[1:] == ["INFO  [channel] i", "WARN  [fastagent] w", "ERROR [agent] e"]


def test_reconfiguring_never_duplicates_lines(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", env={})
    configure_logging("info", env={})
    logging.getLogger("fastagent.host").info("[host] once")
    assert capsys.readouterr().err == "INFO  [host] once\n"


def test_aiohttp_warnings_share_the_format(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("debug", env={})
    logging.getLogger("aiohttp.server").debug("noise")
    logging.getLogger("aiohttp.server").warning("Error handling request from 1.2.3.4")
    assert capsys.readouterr().err == "WARN  [host] aiohttp: Error handling request from 1.2.3.4\n"


def test_exceptions_carry_their_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", env={})
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("fastagent.host").exception("[host] failed")
    err = capsys.readouterr().err
    assert err.startswith("ERROR [host] failed\nTraceback")
    assert "ValueError: boom" in err


async def test_the_turn_trace_is_logged_at_debug(
    tmp_path: Path, start_server: StartServer, http: aiohttp.ClientSession, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("debug", env={})
    slow = SlowTool(seconds=0.01)
    agent = real_agent(tmp_path, slow_tool_script(), [slow.build()])
    try:
        base = await start_server(create_invoke_handler(agent))
        async with http.post(f"{base}/invoke", json={"session": "tr", "text": "be slow\nplease"}) as resp:
            await resp.read()
    finally:
        await agent.aclose()
    err = capsys.readouterr().err
    assert "DEBUG [agent] ▶ turn session=tr ← be slow please\n" in err
    assert "DEBUG [agent]   tool → slow(" in err
    assert "DEBUG [agent] ■ turn session=tr completed" in err
