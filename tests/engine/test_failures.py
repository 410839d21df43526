"""What a failed turn tells its caller: a code, a plain message, a redacted detail; the specifics
go to the server log, and the configured API key goes nowhere."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, Failed, Retrying
from fastagent_cli.engine.failures import describe_failure, redact
from fastagent_cli.errors import SessionError
from fastagent_cli.serving.host import serve
from fastagent_cli.serving.invoke_http import create_invoke_handler
from fastagent_cli.sessions.store import MemorySessionStore
from tests.conformance.suite import drain
from tests.engine.fake_model import KEY, agent_on_fake
from tests.fakes.fake_providers import FakeOpenAI, openai_reply
from tests.serving.conftest import sse_events


async def test_a_provider_error_echoing_the_key_reaches_the_http_client_redacted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "fastagent.agent")
    async with FakeOpenAI() as fake:
        fake.enqueue_error(401, {"error": {"message": f"Incorrect API key provided: {KEY}."}})
        agent = agent_on_fake(fake, tmp_path)
        server = serve(create_invoke_handler(agent), port=0, host="127.0.0.1")
        try:
            port = await server.listening
            async with (
                aiohttp.ClientSession() as http,
                http.post(f"http://127.0.0.1:{port}/invoke", json={"session": "s", "text": "hi"}) as response,
            ):
                body = await response.text()
        finally:
            await server.close()
            await agent.aclose()
    assert KEY not in body and "0123456789abcdef" not in body
    (failed,) = sse_events(body)
    assert failed == Failed(
        "fake: 401 Unauthorized: Incorrect API key provided: [redacted].", False, "model_error"
    )
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "turn session=s failed: fake: 401 Unauthorized" in logged and KEY not in logged


async def test_retry_reasons_are_redacted_too(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_error(503, {"error": {"message": f"upstream refused key {KEY}"}})
        fake.enqueue_stream(openai_reply("fine"))
        agent = agent_on_fake(fake, tmp_path)
        try:
            events = await drain(agent.invoke("s", "hi"))
        finally:
            await agent.aclose()
    (retry,) = [e for e in events if isinstance(e, Retrying)]
    assert KEY not in retry.reason and "[redacted]" in retry.reason
    assert isinstance(events[-1], Completed)


async def test_a_failing_api_key_command_is_named_without_its_command_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "fastagent.agent")
    command = "!echo token-AAAA1111 >&2; exit 3"
    async with FakeOpenAI() as fake:
        agent = agent_on_fake(fake, tmp_path, api_key=command)
        events = await drain(agent.invoke("s", "hi"))
        await agent.aclose()
    assert events == [Failed("the models.json apiKey command exited with 3", False, "config_error")]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "echo token-AAAA1111" in logged  # the operator sees which command failed


class BrokenStore(MemorySessionStore):
    async def open_or_create(self, session: str, inherit: Any = None) -> Any:
        raise KeyError("/srv/agents/acme/.fastagent/sessions/index")


async def test_a_crash_is_internal_error_for_the_caller_and_a_traceback_for_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "fastagent.agent")
    agent = create_agent(model="scripted/echo", sessions=BrokenStore())
    events = await drain(agent.invoke("s", "hi"))
    assert events == [Failed("internal error", False, "internal_error")]
    (record,) = [r for r in caplog.records if "crashed" in r.getMessage()]
    assert "KeyError: '/srv/agents/acme/.fastagent/sessions/index'" in record.getMessage()
    assert record.exc_info is not None


def test_store_errors_keep_the_path_for_the_log_only() -> None:
    error = SessionError(
        "/srv/a/.fastagent/sessions/s1.jsonl is not a session record (no header line)",
        path="/srv/a/.fastagent/sessions/s1.jsonl",
    )
    event, logged = describe_failure(error)
    assert event == Failed("s1.jsonl is not a session record (no header line)", False, "session_store_error")
    assert "/srv/a/.fastagent/sessions/s1.jsonl" in logged


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("cannot read /home/ann/agent/persona.md: denied", "cannot read persona.md: denied"),
        ("in '/opt/x/tools/t.py', line 3", "in 't.py', line 3"),
        (
            "see https://api.example.com/v1/chat for details",
            "see https://api.example.com/v1/chat for details",
        ),
        ("key sk-ant-api03-AbCdEfGhIjKlMnOp rejected", "key sk-ant-[redacted] rejected"),
        ("header Authorization: Bearer abcdefgh.ijklmnop", "header Authorization: Bearer [redacted]"),
        ("relative/path.txt stays", "relative/path.txt stays"),
    ],
)
def test_redact(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_redact_removes_the_given_secrets() -> None:
    assert (
        redact("the key hunter22x was refused", ["hunter22x", None, ""]) == "the key [redacted] was refused"
    )
