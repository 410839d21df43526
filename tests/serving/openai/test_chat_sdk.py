"""``/v1/models`` and ``/v1/chat/completions`` against the real ``fastagent start``, driven by the
official ``openai`` SDK (issue 31 item 1)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from tests.serving.openai.conftest import Spawn

IMAGE = "data:image/png;base64," + (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def client(base: str, key: str = "unused") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base, api_key=key, max_retries=0)


def session_files(agent: Path) -> list[str]:
    root = agent / ".fastagent" / "sessions"
    return sorted(p.name for p in root.rglob("*.jsonl")) if root.exists() else []


async def test_the_agent_is_the_one_model(serve_probe: Spawn) -> None:
    async with serve_probe() as (server, base), client(base) as api:
        listed = [model.id async for model in api.models.list()]
        assert listed == ["helper"]
        assert (await api.models.retrieve("helper")).owned_by == "fastagent"
        with pytest.raises(openai.NotFoundError) as missing:
            await api.models.retrieve("gpt-4o")
        assert missing.value.code == "model_not_found"
        await server.wait_for(re.escape("OpenAI-compatible API: http://127.0.0.1:"))  # printed after the port
        assert "faces:     openai (OpenAI-compatible API on /v1)" in server.text


async def test_the_history_the_client_sends_is_what_the_model_sees(
    serve_probe: Spawn, probe_agent: Path
) -> None:
    async with serve_probe() as (_server, base), client(base) as api:
        answer = await api.chat.completions.create(
            model="helper",
            messages=[
                {"role": "system", "content": "Answer in French."},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello!"},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is this?"},
                        {"type": "image_url", "image_url": {"url": IMAGE}},
                    ],
                },
            ],
        )
        seen = json.loads(answer.choices[0].message.content or "")
        assert seen["persona"] is True  # the agent's system prompt stays the agent's
        assert seen["seen"] == [
            "user: [Context from the client application's system message]\nAnswer in French.\n\n---\n\nhi",
            "assistant: hello!",
            "user: what is this? | <image image/png>",
        ]
        assert answer.object == "chat.completion" and answer.model == "helper"
        assert answer.choices[0].finish_reason == "stop"
        assert answer.usage is not None
        assert (answer.usage.prompt_tokens, answer.usage.completion_tokens, answer.usage.total_tokens) == (
            20,
            5,
            25,
        )
        assert (
            answer.usage.prompt_tokens_details is not None
            and answer.usage.prompt_tokens_details.cached_tokens == 0
        )
        # the next request re-sends the whole conversation: nothing accumulated in between
        again = await api.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "hi"}]
        )
        assert json.loads(again.choices[0].message.content or "")["seen"] == ["user: hi"]
        for _ in range(50):  # the one-off sessions are deleted once their turn settled
            if not session_files(probe_agent):
                break
            await asyncio.sleep(0.05)
        assert session_files(probe_agent) == []


async def test_streaming_chunks_reasoning_and_usage(serve_probe: Spawn) -> None:
    async with serve_probe() as (_server, base), client(base) as api:
        stream = await api.chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "think about it"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        assert {c.object for c in chunks} == {"chat.completion.chunk"}
        assert len({c.id for c in chunks}) == 1
        assert chunks[0].choices[0].delta.role == "assistant"
        reasoning = "".join(
            getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices
        )
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert (reasoning, content) == ("pondering deeply", "thought done")
        finishing = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assert finishing == ["stop"]
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
        assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (11, 3)
        assert all(c.usage is None for c in chunks[:-1])


async def test_the_stream_ends_with_done_and_has_no_usage_unless_asked(serve_probe: Spawn) -> None:
    async with serve_probe() as (_server, base), aiohttp.ClientSession() as http:
        body = {"model": "helper", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        async with http.post(f"{base}/chat/completions", json=body) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/event-stream")
            raw = await response.text()
        messages = [m for m in raw.split("\n\n") if m.strip()]
        assert messages[-1] == "data: [DONE]"
        assert all(m.startswith("data: ") for m in messages)
        parsed = [json.loads(m[6:]) for m in messages[:-1]]
        assert all("usage" not in p for p in parsed)
        assert parsed[-1]["choices"][0]["finish_reason"] == "stop"


async def test_the_agents_own_tools_never_reach_the_client_as_tool_calls(serve_probe: Spawn) -> None:
    async with serve_probe() as (_server, base), client(base) as api:
        stream = await api.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "use a tool"}], stream=True
        )
        chunks = [chunk async for chunk in stream]
        assert all(not c.choices or c.choices[0].delta.tool_calls is None for c in chunks)
        assert (
            "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "the tool said tool-ran"
        )
        assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
            "stop"
        ]


async def test_an_explicit_session_keeps_the_conversation_server_side(
    serve_probe: Spawn, probe_agent: Path
) -> None:
    async with serve_probe() as (_server, base), client(base) as api:
        headers = {"X-Fastagent-Session": "webui-1"}
        first = await api.chat.completions.create(
            model="helper",
            messages=[{"role": "system", "content": "ctx"}, {"role": "user", "content": "one"}],
            extra_headers=headers,
        )
        assert json.loads(first.choices[0].message.content or "")["seen"] == [
            "user: [Context from the client application's system message]\nctx\n\n---\n\none"
        ]
        # the client re-sends everything; only its new message is the turn (the session has the rest)
        second = await api.chat.completions.create(
            model="helper",
            messages=[
                {"role": "system", "content": "ctx"},
                {"role": "user", "content": "one"},
                {"role": "assistant", "content": "whatever the client kept"},
                {"role": "user", "content": "two"},
            ],
            extra_headers=headers,
        )
        seen = json.loads(second.choices[0].message.content or "")["seen"]
        assert len(seen) == 3 and seen[1].startswith("assistant: {") and seen[2] == "user: two"
        by_user = await api.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "u"}], user="alice"
        )
        assert json.loads(by_user.choices[0].message.content or "")["seen"] == ["user: u"]
        by_meta = await api.chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "m"}],
            metadata={"session": "alice"},
            store=True,
        )
        assert json.loads(by_meta.choices[0].message.content or "")["seen"][-1] == "user: m"
        assert len(json.loads(by_meta.choices[0].message.content or "")["seen"]) == 3  # alice's session
        names = " ".join(session_files(probe_agent))
        assert "webui-1" in names and "alice" in names


async def test_a_busy_session_is_a_409_shared_with_invoke(serve_probe: Spawn) -> None:
    async with serve_probe() as (_server, base), aiohttp.ClientSession() as http, client(base) as api:
        headers = {"X-Fastagent-Session": "shared"}
        slow = asyncio.create_task(
            api.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": "slow"}], extra_headers=headers
            )
        )
        await asyncio.sleep(1.0)
        with pytest.raises(openai.ConflictError) as busy:
            await api.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": "hi"}], extra_headers=headers
            )
        assert busy.value.code == "session_busy"
        assert busy.value.response.headers["Retry-After"] == "1"
        # /invoke and the face hold one lease: /invoke on the same session is busy too
        root = base.removesuffix("/v1")
        async with http.post(f"{root}/invoke", json={"session": "shared", "text": "hi"}) as response:
            assert '"code":"session_busy"' in await response.text()
        assert (await slow).choices[0].message.content == "slow answer"


async def test_failed_turns_answer_openai_errors(serve_probe: Spawn) -> None:
    async with serve_probe() as (server, base), client(base) as api:
        with pytest.raises(openai.APIStatusError) as failed:
            await api.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": "reject me"}]
            )
        assert failed.value.status_code == 502
        assert failed.value.body == {
            "message": "scripted: 401 bad key",
            "type": "server_error",
            "param": None,
            "code": "model_error",
        }
        # a turn that fails after the stream started ends it with an error the SDK raises
        stream = await api.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "break later"}], stream=True
        )
        with pytest.raises(openai.APIError, match="the model broke mid-turn"):
            async for _chunk in stream:
                pass
        assert "Traceback" not in server.text


async def test_a_client_that_leaves_aborts_the_turn_and_frees_the_session(serve_probe: Spawn) -> None:
    async with serve_probe() as (server, base), aiohttp.ClientSession() as http, client(base) as api:
        headers = {"X-Fastagent-Session": "left"}
        body = {"model": "helper", "stream": True, "messages": [{"role": "user", "content": "sleep long"}]}
        response = await http.post(f"{base}/chat/completions", json=body, headers=headers)
        assert response.status == 200  # the turn runs its 30 s command
        response.close()  # the client leaves while the agent is silent
        started = time.monotonic()
        again = await api.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "hi"}], extra_headers=headers
        )
        assert time.monotonic() - started < 5
        assert json.loads(again.choices[0].message.content or "")["seen"][-1] == "user: hi"
        assert "Traceback" not in server.text


SEEN = {
    "type": "object",
    "properties": {"persona": {"type": "boolean"}, "seen": {"type": "array", "items": {"type": "string"}}},
    "required": ["persona", "seen"],
}


async def test_response_format_json_schema_answers_the_validated_object(serve_probe: Spawn) -> None:
    fmt: Any = {"type": "json_schema", "json_schema": {"name": "seen", "schema": SEEN}}
    async with serve_probe() as (_server, base), client(base) as api:
        answer = await api.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "hi"}], response_format=fmt
        )
        assert json.loads(answer.choices[0].message.content or "") == {"persona": True, "seen": ["user: hi"]}

        stream = await api.chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "hi again"}],
            response_format=fmt,
            stream=True,
        )
        parts = [c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content]
        assert len(parts) == 1  # the attempts' text stays inside: one delta, the object
        assert json.loads(parts[0]) == {"persona": True, "seen": ["user: hi again"]}

        anything = await api.chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "x"}],
            response_format={"type": "json_object"},
        )
        assert json.loads(anything.choices[0].message.content or "")["seen"] == ["user: x"]

        never: Any = {
            "type": "json_schema",
            "json_schema": {"name": "n", "schema": {**SEEN, "required": ["nope"]}},
        }
        with pytest.raises(openai.InternalServerError) as failed:
            await api.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": "y"}], response_format=never
            )
        assert failed.value.code == "invalid_output"
