"""``schema`` in the body of ``POST /invoke`` and ``POST /control/invoke``, through the real host
``start`` composes: the validated object in ``completed.data.output``, ``invalid_output`` when the
model keeps answering otherwise, 400 for a schema that is not an object."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from fastagent_cli.contract import Completed, Failed
from fastagent_cli.serving.host import serve
from fastagent_cli.serving.service import create_agent_service
from tests.conftest import AgentFactory
from tests.serving.conftest import sse_events

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SCRIPT = {
    "rules": [
        {"match": "/refuse|not a JSON object/", "steps": ["no."]},
        {"steps": ['{"name": "Ada", "age": 36}']},
    ]
}
PERSON = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}


@pytest.fixture
async def base(make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    monkeypatch.setenv("FASTAGENT_CONTROL_TOKEN", TOKEN)
    agent_dir = make_agent(
        {"scripts/p.json": json.dumps(SCRIPT)},
        model="scripted/p",
        config="session_control = true\ncoding_tools = false\n",
    )
    service = await create_agent_service(agent_dir)
    server = serve(service.handler, port=0, host="127.0.0.1")
    port = await server.listening
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await server.close()
        await service.close()


@pytest.mark.parametrize("path", ["/invoke", "/control/invoke"])
async def test_schema_in_the_body(base: str, path: str) -> None:
    async with aiohttp.ClientSession(headers=AUTH) as http:
        async with http.post(
            f"{base}{path}", json={"session": "a", "text": "who?", "schema": PERSON}
        ) as resp:
            assert resp.status == 200
            events = sse_events(await resp.text())
        assert isinstance(events[-1], Completed) and events[-1].data["output"] == {"name": "Ada", "age": 36}
        body = {"session": "b", "text": "refuse", "schema": PERSON}
        async with http.post(f"{base}{path}", json=body) as resp:
            failed = sse_events(await resp.text())[-1]
        assert isinstance(failed, Failed) and failed.code == "invalid_output" and not failed.retryable
        async with http.post(
            f"{base}{path}", json={"session": "c", "text": "x", "schema": "age int"}
        ) as resp:
            assert (resp.status, await resp.text()) == (400, '"schema" must be a JSON Schema object\n')
        bad = {"session": "d", "text": "x", "schema": {"type": "object", "required": "age"}}
        async with http.post(f"{base}{path}", json=bad) as resp:
            failed = sse_events(await resp.text())[-1]
        assert isinstance(failed, Failed) and failed.code == "invalid_schema"
        async with http.post(f"{base}{path}", json={"session": "e", "text": "who?"}) as resp:
            plain = sse_events(await resp.text())[-1]
        assert isinstance(plain, Completed) and "output" not in plain.data
