"""An ``apiKey: "!command"`` runs off the event loop, once per process, with a timeout, and its
failure is kept (retried after a backoff) and named in one line."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastagent_cli.errors import CredentialError
from fastagent_cli.models import key_command
from tests.conftest import AgentFactory
from tests.serving.serving_proc import ServerProcess, get


async def start_turn(port: int, session: str) -> asyncio.StreamWriter:
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps({"session": session, "text": "hi"}).encode()
    writer.write(
        b"POST /invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    return writer


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    key_command.forget_all()
    yield
    key_command.forget_all()


async def test_health_answers_at_once_while_the_key_command_hangs(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    provider = {
        "baseUrl": "http://127.0.0.1:9/v1",
        "api": "openai-completions",
        "apiKey": f"!touch {started}; sleep 600",
        "models": [{"id": "m"}],
    }
    agent = make_agent({"models.json": json.dumps({"providers": {"fake": provider}})}, model="fake/m")
    async with ServerProcess.spawn("start", str(agent), "--port", "0", "--bind", "127.0.0.1") as server:
        port = await server.port()
        writers = [await start_turn(port, f"s{i}") for i in range(3)]
        try:
            for _ in range(100):
                if started.exists():
                    break
                await asyncio.sleep(0.05)
            assert started.exists()
            slowest = 0.0
            for _ in range(10):
                begun = time.monotonic()
                assert await get(port) == (200, "ok\n")
                slowest = max(slowest, time.monotonic() - begun)
                await asyncio.sleep(0.05)
            assert slowest < 0.1, f"/health took {slowest:.3f} s while the apiKey command hung"
        finally:
            for writer in writers:
                writer.close()


async def test_a_failure_is_kept_and_retried_after_a_backoff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(key_command, "FIRST_BACKOFF_S", 0.3)
    runs = tmp_path / "runs"
    command = f"echo run >> {runs}; echo 'vault: locked' >&2; exit 4"
    await asyncio.gather(*(key_command.prime(command) for _ in range(5)))  # one run for all five
    for _ in range(3):
        with pytest.raises(CredentialError) as info:
            key_command.command_key(command)  # on the loop: the kept failure, no run, no wait
    assert info.value.message == f"apiKey command {command!r} exited with 4: vault: locked"
    assert info.value.public == "the models.json apiKey command exited with 4"
    assert runs.read_text().count("run") == 1
    await asyncio.sleep(0.35)
    await key_command.prime(command)  # the backoff passed: it runs again
    assert runs.read_text().count("run") == 2


async def test_a_key_is_kept_for_the_process(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    command = f"echo run >> {runs}; printf sk-from-vault"
    await key_command.prime(command)
    assert [key_command.command_key(command) for _ in range(3)] == ["sk-from-vault"] * 3
    assert runs.read_text().count("run") == 1


def test_a_hanging_command_times_out_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_command, "COMMAND_TIMEOUT_S", 0.3)
    begun = time.monotonic()
    with pytest.raises(CredentialError) as info:
        key_command.command_key("sleep 30 & sleep 30")  # a child of its own holds the pipe too
    assert time.monotonic() - begun < 5
    assert info.value.message == "apiKey command 'sleep 30 & sleep 30' timed out after 0.3 s"


async def test_on_the_loop_an_unsettled_command_is_never_waited_for(tmp_path: Path) -> None:
    begun = time.monotonic()
    with pytest.raises(CredentialError, match="is still running"):
        key_command.command_key("sleep 2")
    assert time.monotonic() - begun < 0.5
