from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any, cast

import pytest

from fastagent_cli.errors import ProviderError
from fastagent_cli.models.http_pool import PoolLimits
from fastagent_cli.models.openai_chat import OpenAIChatClient
from fastagent_cli.models.types import (
    AssistantMessage,
    Message,
    ModelInfo,
    ModelRequest,
    StreamDelta,
    ThinkingLevel,
    ToolSpec,
)
from tests.fakes.fake_providers import (
    FakeCall,
    FakeOpenAI,
    openai_chunk,
    openai_error_body,
    openai_reply,
    openai_usage_chunk,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def client() -> AsyncIterator[OpenAIChatClient]:
    c = OpenAIChatClient(pool=PoolLimits(connect_timeout_s=2, read_timeout_s=5))
    yield c
    await c.aclose()


def user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def make_request(
    model: ModelInfo,
    messages: Sequence[Message] = (),
    *,
    tools: Sequence[ToolSpec] = (),
    thinking: ThinkingLevel = "off",
    api_key: str | None = "sk-test",
) -> ModelRequest:
    return ModelRequest(
        model=model,
        system="You are terse.",
        messages=list(messages) or [user("hi")],
        tools=tools,
        thinking=thinking,
        api_key=api_key,
    )


async def collect(
    client: OpenAIChatClient, request: ModelRequest
) -> tuple[list[StreamDelta], AssistantMessage]:
    items: list[Any] = []
    async with aclosing(client.stream(request)) as stream:  # type: ignore[type-var]
        async for item in stream:
            items.append(item)
    *deltas, final = items
    assert all(isinstance(d, StreamDelta) for d in deltas)
    assert isinstance(final, dict) and final["role"] == "assistant"
    return cast(list[StreamDelta], deltas), cast(AssistantMessage, final)


async def fails(client: OpenAIChatClient, request: ModelRequest) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await collect(client, request)
    return info.value


# ----------------------------------------------------------------------------- streaming


async def test_text_split_across_chunks_with_role_chunk_usage_chunk_and_done(
    fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    fake.enqueue_stream(openai_reply("Hello there, friend", parts=4, usage=(12, 4)))
    model = fake.model_info(cost={"input": 1.0, "output": 2.0})
    deltas, final = await collect(client, make_request(model))
    assert [d.text for d in deltas] == ["Hello", " ther", "e, fr", "iend"]
    assert {d.kind for d in deltas} == {"text"}
    assert final["content"] == [{"type": "text", "text": "Hello there, friend"}]
    assert final["stopReason"] == "stop"
    assert final["api"] == "openai-completions"
    assert (final["provider"], final["model"]) == ("fake-openai", "fake-model")
    assert final["timestamp"] > 1_600_000_000_000
    usage = final["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["totalTokens"]) == (12, 4, 0, 16)
    assert usage["cost"]["input"] == pytest.approx(12e-6)
    assert usage["cost"]["output"] == pytest.approx(8e-6)
    assert usage["cost"]["total"] == pytest.approx(20e-6)


async def test_two_parallel_tool_calls_assembled_by_index(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    calls = [
        FakeCall("read", {"path": "a.txt", "limit": 10}, id="call_A"),
        FakeCall("bash", {"command": "ls -la /tmp"}, id="call_B"),
    ]
    fake.enqueue_stream(openai_reply("Let me look.", tool_calls=calls, parts=4))
    deltas, final = await collect(client, make_request(fake.model_info()))
    assert "".join(d.text for d in deltas) == "Let me look."
    assert final["stopReason"] == "toolUse"
    assert final["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "toolCall", "id": "call_A", "name": "read", "arguments": {"path": "a.txt", "limit": 10}},
        {"type": "toolCall", "id": "call_B", "name": "bash", "arguments": {"command": "ls -la /tmp"}},
    ]


async def test_interleaved_tool_call_chunks_and_missing_ids(
    fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    def tc(index: int, **fields: Any) -> dict[str, Any]:
        return openai_chunk({"tool_calls": [{"index": index, **fields}]}, id=None)

    fake.enqueue_stream(
        [
            openai_chunk({"role": "assistant"}, id=None),
            {"object": "chat.completion.chunk", "choices": []},  # keep-alive with empty choices
            tc(0, function={"name": "a", "arguments": '{"x"'}),
            tc(1, id="call_1", function={"name": "b", "arguments": ""}),
            tc(0, function={"arguments": ": 1}"}),
            tc(1, function={"arguments": ""}),
            openai_chunk({}, finish_reason="tool_calls", id=None),
        ]
    )
    _, final = await collect(client, make_request(fake.model_info()))
    first, second = final["content"]
    assert first["type"] == "toolCall" and second["type"] == "toolCall"
    assert first["id"].startswith("call_0_") and len(first["id"]) > len("call_0_")
    assert (first["name"], first["arguments"]) == ("a", {"x": 1})
    assert (second["id"], second["name"], second["arguments"]) == ("call_1", "b", {})


async def test_llama_cpp_python_style_stream(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    chunks: list[Any] = [": ping - 2024-01-01 00:00:00\n\n"]
    chunks += openai_reply(
        tool_calls=[FakeCall("get_weather", {"city": "Paris"}, id="call_x")], llama_style=True
    )
    chunks[1] = openai_chunk({"role": "assistant", "content": None, "tool_calls": None})
    fake.enqueue_stream(chunks)
    deltas, final = await collect(client, make_request(fake.model_info()))
    assert deltas == []
    assert final["content"] == [
        {"type": "toolCall", "id": "call_x", "name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    assert final["stopReason"] == "toolUse"
    assert final["usage"]["totalTokens"] == 0  # llama-cpp-python sends no usage


async def test_reasoning_content_and_reasoning_become_thinking(
    fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    fake.enqueue_stream(
        [
            openai_chunk({"role": "assistant"}),
            openai_chunk({"reasoning_content": "First, "}),
            openai_chunk({"reasoning": "think."}),
            openai_chunk({"content": "Answer"}),
            openai_chunk({}, finish_reason="stop"),
        ]
    )
    deltas, final = await collect(client, make_request(fake.model_info()))
    assert [(d.kind, d.text) for d in deltas] == [
        ("thinking", "First, "),
        ("thinking", "think."),
        ("text", "Answer"),
    ]
    assert final["content"] == [
        {"type": "thinking", "thinking": "First, think."},
        {"type": "text", "text": "Answer"},
    ]


@pytest.mark.parametrize(
    ("reason", "stop"),
    [("stop", "stop"), ("end", "stop"), ("length", "length"), ("content_filter", "error"), ("weird", "stop")],
)
async def test_finish_reason_mapping(
    fake: FakeOpenAI, client: OpenAIChatClient, reason: str, stop: str
) -> None:
    fake.enqueue_stream(openai_reply("x", finish_reason=reason))
    _, final = await collect(client, make_request(fake.model_info()))
    assert final["stopReason"] == stop
    assert ("errorMessage" in final) is (stop == "error")


async def test_tool_calls_win_over_finish_reason_and_bad_json_is_kept(
    fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    fake.enqueue_stream(openai_reply(tool_calls=[FakeCall("f", '{"a": 1', id="c1")], finish_reason="stop"))
    _, final = await collect(client, make_request(fake.model_info()))
    assert final["stopReason"] == "toolUse"
    assert final["content"][0] == {
        "type": "toolCall",
        "id": "c1",
        "name": "f",
        "arguments": {"_invalid_json": '{"a": 1'},
    }


async def test_usage_with_cache_and_separate_reasoning_tokens(
    fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    usage = openai_usage_chunk(100, 30, cached_tokens=60, reasoning_tokens=20)  # reasoning inside completion
    separate = openai_usage_chunk(100, 30, reasoning_tokens=20)
    separate["usage"]["total_tokens"] = 150  # reasoning reported on top of completion_tokens
    fake.enqueue_stream([*openai_reply("a"), usage])
    fake.enqueue_stream([*openai_reply("b"), separate])
    model = fake.model_info(cost={"input": 3.0, "output": 15.0, "cacheRead": 0.3})
    _, first = await collect(client, make_request(model))
    _, second = await collect(client, make_request(model))
    u = first["usage"]
    assert (u["input"], u["output"], u["cacheRead"], u["cacheWrite"], u["totalTokens"]) == (
        40,
        30,
        60,
        0,
        130,
    )
    assert u["cost"]["cacheRead"] == pytest.approx(60 * 0.3 / 1e6)
    assert u["cost"]["total"] == pytest.approx((40 * 3 + 30 * 15 + 60 * 0.3) / 1e6)
    assert (second["usage"]["output"], second["usage"]["totalTokens"]) == (50, 150)


async def test_crlf_stream_and_done_without_finish_reason(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    fake.enqueue_stream(
        [
            f"data: {json.dumps(openai_chunk({'content': 'ok'}))}\r\n\r\n",
            ": ping\r\n\r\n",
            "data: [DONE]\r\n\r\n",
        ],
        done=False,
    )
    deltas, final = await collect(client, make_request(fake.model_info()))
    assert [d.text for d in deltas] == ["ok"] and final["stopReason"] == "stop"


async def test_server_that_ignores_stream_true(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    completion = {
        "id": "x",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
    fake.enqueue_raw(200, json.dumps(completion), content_type="application/json")
    _, final = await collect(client, make_request(fake.model_info()))
    assert final["content"] == [{"type": "toolCall", "id": "c", "name": "f", "arguments": {}}]
    assert final["usage"]["totalTokens"] == 7


async def test_connection_is_reused_after_done(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    fake.enqueue_stream(openai_reply("one"))
    fake.enqueue_stream(openai_reply("two"))
    await collect(client, make_request(fake.model_info()))
    await collect(client, make_request(fake.model_info()))
    first, second = fake.requests
    assert first.peer and first.peer == second.peer


# ----------------------------------------------------------------------------- failures


async def test_429_with_retry_after(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    fake.enqueue_error(429, openai_error_body("Rate limit reached", type="requests"), {"Retry-After": "2"})
    err = await fails(client, make_request(fake.model_info()))
    assert err.retryable and err.status == 429 and err.retry_after == 2.0
    assert err.message == "fake-openai: 429 Too Many Requests: Rate limit reached"


async def test_500_is_retryable(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    fake.enqueue_raw(500, "Internal Server Error")
    err = await fails(client, make_request(fake.model_info()))
    assert err.retryable and err.status == 500


async def test_401_is_not_retryable_and_reads_in_one_line(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    body = openai_error_body("Incorrect API key provided: sk-test.\nYou can find your key at ...")
    fake.enqueue_error(401, body)
    err = await fails(client, make_request(fake.model_info(provider="openai")))
    assert not err.retryable and err.status == 401
    assert (
        err.message
        == "openai: 401 Unauthorized: Incorrect API key provided: sk-test. You can find your key at ..."
    )


async def test_stream_cut_mid_answer_is_retryable(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    fake.enqueue_cut(openai_reply("This answer will be cut", parts=5)[:3])
    err = await fails(client, make_request(fake.model_info()))
    assert err.retryable
    assert "stream interrupted" in err.message or "before the response was complete" in err.message


async def test_stream_ending_cleanly_without_done_or_finish_is_incomplete(
    fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    fake.enqueue_stream(openai_reply("partial answer")[:2], done=False)
    err = await fails(client, make_request(fake.model_info()))
    assert err.retryable and err.message == "fake-openai: stream ended before the response was complete"


async def test_error_object_inside_the_stream(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    fake.enqueue_stream(
        [openai_chunk({"content": "a"}), {"error": {"code": 502, "message": "upstream died"}}]
    )
    err = await fails(client, make_request(fake.model_info()))
    assert err.retryable and err.status == 502 and "upstream died" in err.message


async def test_a_refused_local_connection_fails_at_once_naming_the_url(client: OpenAIChatClient) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = ModelInfo(
        provider="ollama", id="m", api="openai-completions", base_url=f"http://127.0.0.1:{port}/v1"
    )
    err = await fails(client, make_request(model))
    assert not err.retryable  # nothing listens there: retrying for 15 s would not help
    assert err.message == (
        f"ollama: nothing is listening at http://127.0.0.1:{port}/v1/chat/completions (connection "
        "refused): is Ollama (`ollama serve`) running? Start it, or point the provider's baseUrl in "
        "models.json at the server"
    )


# ----------------------------------------------------------------------------- cancellation


async def test_closing_the_generator_closes_the_connection(
    fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    fake.enqueue_hold(openai_reply("streaming forever")[:3])
    stream = client.stream(make_request(fake.model_info()))
    first = await anext(stream)
    assert first == StreamDelta("text", "stream")
    await stream.aclose()  # type: ignore[attr-defined]
    assert await fake.wait_disconnect(1.0)


async def test_cancelling_the_consumer_closes_the_connection(
    fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    fake.enqueue_hold(openai_reply("streaming forever")[:2])
    got_first = asyncio.Event()

    async def consume() -> None:
        async with aclosing(client.stream(make_request(fake.model_info()))) as stream:  # type: ignore[type-var]
            async for _ in stream:
                got_first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_first.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake.wait_disconnect(1.0)


# ----------------------------------------------------------------------------- request shape


def assistant(*blocks: Any, stop: str = "toolUse", model: str = "fake-model") -> Message:
    return {
        "role": "assistant",
        "content": list(blocks),
        "api": "openai-completions",
        "provider": "fake-openai",
        "model": model,
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "stopReason": stop,  # type: ignore[typeddict-item]
        "timestamp": 2,
    }


def tool_result(call_id: str, text: str, *, image: bool = False) -> Message:
    content: list[Any] = [{"type": "text", "text": text}]
    if image:
        content.append({"type": "image", "data": "AAAA", "mimeType": "image/png"})
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": content,
        "isError": False,
        "timestamp": 3,
    }


CONVERSATION: list[Message] = [
    user("read two files"),
    assistant(
        {"type": "thinking", "thinking": "I should read both."},
        {"type": "text", "text": "Reading"},
        {"type": "text", "text": " them."},
        {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a"}},
        {"type": "toolCall", "id": "call_2", "name": "read", "arguments": {"path": "b"}},
    ),
    tool_result("call_1", "contents of a", image=True),
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "and this picture"},
            {"type": "image", "data": "QUJD", "mimeType": "image/jpeg"},
        ],
        "timestamp": 4,
    },
    assistant({"type": "text", "text": "half an answ"}, stop="error"),
    assistant({"type": "toolCall", "id": "call_3", "name": "read", "arguments": {"_invalid_json": "{oops"}}),
    tool_result("call_3", "bad args"),
]
TOOLS = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]


async def test_request_shape(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    fake.enqueue_stream(openai_reply("done"))
    model = fake.model_info(headers={"X-Extra": "1"}, max_tokens=8000)
    await collect(client, make_request(model, CONVERSATION, tools=TOOLS, thinking="high"))
    sent = fake.last_request
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["x-extra"] == "1"
    body = sent.body
    assert body["model"] == "fake-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 8000 and "max_completion_tokens" not in body
    assert "reasoning_effort" not in body  # not a reasoning model
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "read two files"},
        {
            "role": "assistant",
            "content": "Reading\n\n them.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "b"}'},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "contents of a\n(image image/png omitted from the tool result)",
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "No result provided"},
        {"role": "user", "content": "and this picture\n(image omitted: this model does not accept images)"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "read", "arguments": "{oops"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "bad args"},
    ]


async def test_images_for_vision_models(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    fake.enqueue_stream(openai_reply("a cat"))
    model = fake.model_info(input=("text", "image"))
    await collect(client, make_request(model, CONVERSATION[3:4], api_key=None))
    sent = fake.last_request
    assert "authorization" not in sent.headers
    assert sent.body["messages"][1]["content"] == [
        {"type": "text", "text": "and this picture"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,QUJD"}},
    ]
    assert "tools" not in sent.body


@pytest.mark.parametrize(
    ("level", "effort"),
    [("minimal", "low"), ("low", "low"), ("medium", "medium"), ("high", "high"), ("xhigh", "high")],
)
async def test_reasoning_model_on_openai(
    fake: FakeOpenAI, client: OpenAIChatClient, level: ThinkingLevel, effort: str
) -> None:
    fake.enqueue_stream(openai_reply("x"))
    model = fake.model_info(provider="openai", reasoning=True, max_tokens=100_000)
    await collect(client, make_request(model, thinking=level))
    body = fake.last_request.body
    assert body["reasoning_effort"] == effort
    assert body["messages"][0] == {"role": "developer", "content": "You are terse."}
    assert body["max_completion_tokens"] == 32_000 and "max_tokens" not in body


async def test_reasoning_off_and_compat_flags(fake: FakeOpenAI, client: OpenAIChatClient) -> None:
    compat = {
        "supportsUsageInStreaming": False,
        "maxTokensField": "max_completion_tokens",
        "reasoningEffortMap": {"minimal": "minimal"},
        "supportsDeveloperRole": False,
        "requiresToolResultName": True,
    }
    model = fake.model_info(reasoning=True, compat=compat)
    fake.enqueue_stream(openai_reply("x"))
    fake.enqueue_stream(openai_reply("y"))
    await collect(client, make_request(model, thinking="off"))
    await collect(client, make_request(model, CONVERSATION[:3], thinking="minimal"))
    off, minimal = (r.body for r in fake.requests)
    assert "reasoning_effort" not in off and "stream_options" not in off
    assert off["max_completion_tokens"] == 16_384
    assert minimal["reasoning_effort"] == "minimal"
    assert minimal["messages"][0]["role"] == "system"
    assert minimal["messages"][3]["name"] == "read"


async def test_thinking_from_another_model_is_sent_as_text(
    fake: FakeOpenAI, client: OpenAIChatClient
) -> None:
    fake.enqueue_stream(openai_reply("x"))
    history = [
        user("q"),
        assistant(
            {"type": "thinking", "thinking": "pondering"},
            {"type": "text", "text": "A"},
            stop="stop",
            model="other",
        ),
        user("q2"),
    ]
    await collect(client, make_request(fake.model_info(), history))
    assert fake.last_request.body["messages"][2] == {"role": "assistant", "content": "pondering\n\nA"}
