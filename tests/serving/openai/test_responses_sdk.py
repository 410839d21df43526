"""``/v1/responses`` against the real ``fastagent start``, driven by the official ``openai`` SDK:
streaming events, ``previous_response_id`` (a response id is a session position), ``store``."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.serving.openai.conftest import Spawn


def client(base: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base, api_key="unused", max_retries=0)


def seen(response: object) -> list[str]:
    return list(json.loads(response.output_text)["seen"])  # type: ignore[attr-defined]


async def test_a_response_and_its_continuation(serve_probe: Spawn) -> None:
    async with serve_probe() as (_server, base), client(base) as api:
        first = await api.responses.create(model="helper", input="hello there", instructions="be brief")
        assert first.object == "response" and first.status == "completed" and first.model == "helper"
        assert first.id.startswith("resp_")
        assert seen(first) == [
            "user: [Context from the client application's system message]\nbe brief\n\n---\n\nhello there"
        ]
        assert json.loads(first.output_text)["persona"] is True
        assert first.usage is not None and (first.usage.input_tokens, first.usage.output_tokens) == (20, 5)
        assert [item.type for item in first.output] == ["message"]
        second = await api.responses.create(model="helper", input="and then?", previous_response_id=first.id)
        assert second.previous_response_id == first.id
        history = seen(second)
        assert len(history) == 3 and history[1].startswith("assistant: {") and history[2] == "user: and then?"


async def test_continuing_an_earlier_response_forks_the_conversation(serve_probe: Spawn) -> None:
    async with serve_probe() as (_server, base), client(base) as api:
        first = await api.responses.create(model="helper", input=[{"role": "user", "content": "root"}])
        left = await api.responses.create(model="helper", input="left", previous_response_id=first.id)
        right = await api.responses.create(model="helper", input="right", previous_response_id=first.id)
        assert seen(left)[-1] == "user: left" and seen(right)[-1] == "user: right"
        assert len(seen(right)) == 3  # the right branch never saw "left"
        assert all("left" not in line for line in seen(right)[:-1] if line.startswith("user"))
        deeper = await api.responses.create(model="helper", input="more", previous_response_id=left.id)
        assert [line for line in seen(deeper) if line.startswith("user")] == [
            "user: root",
            "user: left",
            "user: more",
        ]


async def test_streaming_events_in_the_responses_shape(serve_probe: Spawn) -> None:
    async with serve_probe() as (_server, base), client(base) as api:
        async with api.responses.stream(model="helper", input="think it over") as stream:
            events = [event async for event in stream]
            final = await stream.get_final_response()
        kinds = [event.type for event in events]
        assert kinds[:2] == ["response.created", "response.in_progress"]
        assert kinds[-1] == "response.completed"
        assert kinds.count("response.output_item.added") == 2 == kinds.count("response.output_item.done")
        assert [e.sequence_number for e in events] == list(range(len(events)))
        reasoning = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert (reasoning, text) == ("pondering deeply", "thought done")
        assert kinds.index("response.reasoning_text.done") < kinds.index("response.content_part.added")
        assert final.output_text == "thought done" and final.status == "completed"
        assert [item.type for item in final.output] == ["reasoning", "message"]
        assert final.usage is not None and final.usage.output_tokens == 3
        follow = await api.responses.create(model="helper", input="next", previous_response_id=final.id)
        assert seen(follow)[-1] == "user: next"


async def test_a_failed_stream_ends_with_response_failed(serve_probe: Spawn) -> None:
    async with serve_probe() as (_server, base), client(base) as api:
        async with api.responses.stream(model="helper", input="break later") as stream:
            events = [event async for event in stream]
        assert events[-1].type == "response.failed"
        failed = events[-1].response  # type: ignore[union-attr]
        assert failed.status == "failed" and failed.error is not None
        assert failed.error.code == "model_error" and "broke mid-turn" in failed.error.message
        with pytest.raises(openai.APIStatusError) as refused:
            await api.responses.create(model="helper", input="reject me")
        assert refused.value.status_code == 502 and refused.value.code == "model_error"


async def test_response_ids_survive_a_restart_and_store_false_keeps_nothing(serve_probe: Spawn) -> None:
    async with serve_probe() as (_server, base), client(base) as api:
        kept = await api.responses.create(model="helper", input="remember me")
        gone = await api.responses.create(model="helper", input="forget me", store=False)
    async with serve_probe() as (_server, base), client(base) as api:
        after = await api.responses.create(model="helper", input="still there?", previous_response_id=kept.id)
        assert seen(after)[0] == "user: remember me"
        with pytest.raises(openai.BadRequestError) as missing:
            await api.responses.create(model="helper", input="x", previous_response_id=gone.id)
        assert missing.value.code == "previous_response_not_found"
        assert missing.value.param == "previous_response_id"  # type: ignore[attr-defined]


async def test_text_format_json_schema_answers_the_validated_object(serve_probe: Spawn) -> None:
    schema = {"type": "object", "properties": {"seen": {"type": "array"}}, "required": ["seen"]}
    fmt: Any = {"format": {"type": "json_schema", "name": "seen", "schema": schema}}
    async with serve_probe() as (_server, base), client(base) as api:
        response = await api.responses.create(model="helper", input="hello", text=fmt)
        assert json.loads(response.output_text)["seen"] == ["user: hello"]
