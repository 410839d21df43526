"""Lone surrogates (``"\\ud800"``: legal in JSON, unencodable in UTF-8) in a request's text or
session id, or in a model's answer, complete the turn, reach the client as JSON escapes and make
the session file round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp

from fastagent_cli.contract import Completed, Text
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.serving.invoke_http import create_invoke_handler
from fastagent_cli.sessions.layout import spec_id
from fastagent_cli.sessions.store import FileSessionStore
from tests.engine.fake_model import agent_on_fake
from tests.fakes.fake_providers import FakeOpenAI, openai_reply
from tests.serving.conftest import StartServer, real_agent, sse_events

SESSION = "room-\ud800-\udfff"
TEXT = "half a pair: \udc00 and \ud83d alone"


async def post_raw(base: str, body: str) -> tuple[int, str]:
    """POST a JSON text exactly as written (its ``\\udXXX`` escapes included)."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base}/invoke", data=body.encode(), headers={"content-type": "application/json"}) as r,
    ):
        return r.status, await r.text()


def record_lines(agent: EngineAgent, session: str) -> list[dict[str, object]]:
    store = agent.config.sessions
    assert isinstance(store, FileSessionStore)
    path = store.location(session)
    assert path is not None
    raw = path.read_bytes()
    raw.decode("utf-8")  # strict: the file is valid UTF-8
    return [json.loads(line) for line in raw.splitlines()]


async def test_a_request_with_lone_surrogates_completes_and_round_trips(
    tmp_path: Path, start_server: StartServer
) -> None:
    echo = ScriptedModel.from_callable(lambda request: f"you said: {request.last_user_text}")
    agent = real_agent(tmp_path, echo)
    base = await start_server(create_invoke_handler(agent))
    try:
        body = json.dumps({"session": SESSION, "text": TEXT})  # ASCII, escapes and all
        status, text = await post_raw(base, body)
        assert status == 200
        events = sse_events(text)
        assert isinstance(events[-1], Completed)
        assert "".join(e.delta for e in events if isinstance(e, Text)) == f"you said: {TEXT}"
        assert "\\ud83d" in text  # on the wire as a JSON escape
    finally:
        await agent.aclose()
    lines = record_lines(agent, SESSION)
    assert lines[0]["id"] == spec_id(SESSION)  # the header's id: the caller's, in the spec's spelling
    user = lines[1]["message"]
    assert isinstance(user, dict) and user["content"] == [{"type": "text", "text": TEXT}]


async def test_a_model_answer_with_a_lone_surrogate_completes_and_goes_back_to_the_model(
    tmp_path: Path,
) -> None:
    async with FakeOpenAI() as fake:
        fake.enqueue_stream(openai_reply("odd \ud800 char"))
        fake.enqueue_stream(openai_reply("fine"))
        agent = agent_on_fake(fake, tmp_path, sessions=FileSessionStore(tmp_path / "sessions", tmp_path))
        try:
            first = [e async for e in agent.invoke("s", "hi")]
            second = [e async for e in agent.invoke("s", "again")]
        finally:
            await agent.aclose()
        assert isinstance(first[-1], Completed) and isinstance(second[-1], Completed)
        assert "".join(e.delta for e in first if isinstance(e, Text)) == "odd \ud800 char"
        sent = fake.requests[1].raw.decode("utf-8")  # the request body is valid UTF-8
        assert "odd \\ud800 char" in sent
    lines = record_lines(agent, "s")
    answers = [e["message"] for e in lines if isinstance(e.get("message"), dict)]
    assert answers[1]["content"] == [{"type": "text", "text": "odd \ud800 char"}]  # type: ignore[index]
