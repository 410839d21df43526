from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import Any, cast

import pytest

from fastagent_cli.errors import ProviderError
from fastagent_cli.models.anthropic_messages import AnthropicMessagesClient
from fastagent_cli.models.anthropic_request import normalize_tool_id
from fastagent_cli.models.http_pool import PoolLimits
from fastagent_cli.models.types import (
    AssistantMessage,
    Message,
    ModelInfo,
    ModelRequest,
    StreamDelta,
    ThinkingLevel,
    ToolSpec,
    empty_usage,
)
from tests.fakes.fake_providers import (
    FakeAnthropic,
    FakeCall,
    anthropic_error_body,
    anthropic_error_event,
    anthropic_message_end,
    anthropic_message_start,
    anthropic_reply,
    anthropic_text_block,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def client() -> AsyncIterator[AnthropicMessagesClient]:
    c = AnthropicMessagesClient(pool=PoolLimits(connect_timeout_s=2, read_timeout_s=5))
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
    max_tokens: int | None = None,
) -> ModelRequest:
    return ModelRequest(
        model=model,
        system="Be brief.",
        messages=list(messages) or [user("hi")],
        tools=tools,
        thinking=thinking,
        api_key="sk-ant-test",
        max_tokens=max_tokens,
    )


async def collect(
    client: AnthropicMessagesClient, request: ModelRequest
) -> tuple[list[StreamDelta], AssistantMessage]:
    items: list[Any] = []
    async with aclosing(client.stream(request)) as stream:  # type: ignore[type-var]
        async for item in stream:
            items.append(item)
    *deltas, final = items
    assert all(isinstance(d, StreamDelta) for d in deltas)
    assert isinstance(final, dict) and final["role"] == "assistant"
    return cast(list[StreamDelta], deltas), cast(AssistantMessage, final)


async def fails(client: AnthropicMessagesClient, request: ModelRequest) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await collect(client, request)
    return info.value


# ----------------------------------------------------------------------------- streaming


async def test_text_stream_with_usage_and_cost(fake: FakeAnthropic, client: AnthropicMessagesClient) -> None:
    fake.enqueue_stream(
        anthropic_reply(
            "Hello from Claude", parts=3, input_tokens=20, output_tokens=7, cache_read=100, cache_write=50
        )
    )
    model = fake.model_info(cost={"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75})
    deltas, final = await collect(client, make_request(model))
    assert [(d.kind, d.text) for d in deltas] == [("text", "Hello "), ("text", "from C"), ("text", "laude")]
    assert final["content"] == [{"type": "text", "text": "Hello from Claude"}]
    assert final["stopReason"] == "stop"
    assert (final["api"], final["provider"], final["model"]) == (
        "anthropic-messages",
        "fake-anthropic",
        "fake-model",
    )
    usage = final["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]) == (20, 7, 100, 50)
    assert usage["totalTokens"] == 177
    expected = (20 * 3.0 + 7 * 15.0 + 100 * 0.3 + 50 * 3.75) / 1e6
    assert usage["cost"]["total"] == pytest.approx(expected)


async def test_thinking_with_signature_text_and_split_tool_use(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    calls = [
        FakeCall("read", {"path": "notes.md", "offset": 3}, id="toolu_01"),
        FakeCall("ls", {}, id="toolu_02"),
    ]
    fake.enqueue_stream(
        anthropic_reply(
            "Reading.", thinking="The user wants notes.", signature="EqQBCgIYAh", tool_calls=calls, parts=4
        )
    )
    deltas, final = await collect(client, make_request(fake.model_info(reasoning=True), thinking="low"))
    assert "".join(d.text for d in deltas if d.kind == "thinking") == "The user wants notes."
    assert "".join(d.text for d in deltas if d.kind == "text") == "Reading."
    assert final["stopReason"] == "toolUse"
    assert final["content"] == [
        {"type": "thinking", "thinking": "The user wants notes.", "thinkingSignature": "EqQBCgIYAh"},
        {"type": "text", "text": "Reading."},
        {
            "type": "toolCall",
            "id": "toolu_01",
            "name": "read",
            "arguments": {"path": "notes.md", "offset": 3},
        },
        {"type": "toolCall", "id": "toolu_02", "name": "ls", "arguments": {}},
    ]


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("end_turn", "stop"),
        ("pause_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "toolUse"),
        ("refusal", "error"),
    ],
)
async def test_stop_reason_mapping(
    fake: FakeAnthropic, client: AnthropicMessagesClient, reason: str, stop: str
) -> None:
    fake.enqueue_stream(anthropic_reply("x", stop_reason=reason))
    _, final = await collect(client, make_request(fake.model_info()))
    assert final["stopReason"] == stop
    assert ("errorMessage" in final) is (stop == "error")


async def test_unknown_blocks_and_events_are_ignored(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    events: list[Any] = [anthropic_message_start(), ": comment\n\n"]
    events += [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "xx"},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    events += anthropic_text_block(1, "ok")
    events += [{"type": "some_future_event"}, *anthropic_message_end()]
    fake.enqueue_stream(events)
    _, final = await collect(client, make_request(fake.model_info()))
    assert final["content"] == [{"type": "text", "text": "ok"}]


async def test_connection_is_reused_after_message_stop(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_stream(anthropic_reply("one"))
    fake.enqueue_stream(anthropic_reply("two"))
    await collect(client, make_request(fake.model_info()))
    await collect(client, make_request(fake.model_info()))
    first, second = fake.requests
    assert first.peer and first.peer == second.peer


# ----------------------------------------------------------------------------- failures


async def test_overloaded_error_event_is_retryable(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_stream(
        [anthropic_message_start(), *anthropic_text_block(0, "partial"), anthropic_error_event()]
    )
    err = await fails(client, make_request(fake.model_info()))
    assert err.retryable and err.status == 529
    assert err.message == "fake-anthropic: overloaded_error: Overloaded"


async def test_invalid_request_error_event_is_not_retryable(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_stream([anthropic_error_event("invalid_request_error", "bad\nthing")])
    err = await fails(client, make_request(fake.model_info()))
    assert not err.retryable and err.status == 400
    assert err.message == "fake-anthropic: invalid_request_error: bad thing"


async def test_401_is_not_retryable(fake: FakeAnthropic, client: AnthropicMessagesClient) -> None:
    fake.enqueue_error(401, anthropic_error_body("invalid x-api-key", type="authentication_error"))
    err = await fails(client, make_request(fake.model_info(provider="anthropic")))
    assert not err.retryable and err.status == 401
    assert err.message == "anthropic: 401 Unauthorized: invalid x-api-key"


async def test_529_with_retry_after_is_retryable(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_error(529, anthropic_error_body("Overloaded", type="overloaded_error"), {"retry-after": "7"})
    err = await fails(client, make_request(fake.model_info()))
    assert err.retryable and err.retry_after == 7.0
    assert err.message == "fake-anthropic: 529 Overloaded"


async def test_stream_cut_mid_answer_is_retryable(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_cut(anthropic_reply("This will be cut off", parts=4)[:5])
    err = await fails(client, make_request(fake.model_info()))
    assert err.retryable and "stream interrupted" in err.message


async def test_stream_without_message_stop_is_incomplete(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_stream([anthropic_message_start(), *anthropic_text_block(0, "half")])
    err = await fails(client, make_request(fake.model_info()))
    assert err.retryable and err.message == "fake-anthropic: stream ended before the response was complete"


async def test_closing_the_generator_closes_the_connection(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_hold([anthropic_message_start(), *anthropic_text_block(0, "never ending", parts=2)[:2]])
    stream = client.stream(make_request(fake.model_info()))
    assert await anext(stream) == StreamDelta("text", "never ")
    await stream.aclose()  # type: ignore[attr-defined]
    assert await fake.wait_disconnect(1.0)


async def test_cancelling_the_consumer_closes_the_connection(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_hold([anthropic_message_start(), *anthropic_text_block(0, "never ending", parts=2)[:2]])
    started = asyncio.Event()

    async def consume() -> None:
        async with aclosing(client.stream(make_request(fake.model_info()))) as stream:  # type: ignore[type-var]
            async for _ in stream:
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake.wait_disconnect(1.0)


# ----------------------------------------------------------------------------- request shape


def assistant(*blocks: Any, model: str = "fake-model", stop: str = "toolUse") -> Message:
    return cast(
        Message,
        {
            "role": "assistant",
            "content": list(blocks),
            "api": "anthropic-messages",
            "provider": "fake-anthropic",
            "model": model,
            "usage": empty_usage(),
            "stopReason": stop,
            "timestamp": 2,
        },
    )


def tool_result(call_id: str, text: str, *, error: bool = False, image: bool = False) -> Message:
    content: list[Any] = [{"type": "text", "text": text}]
    if image:
        content.append({"type": "image", "data": "AAAA", "mimeType": "image/png"})
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": content,
        "isError": error,
        "timestamp": 3,
    }


CONVERSATION: list[Message] = [
    user("first"),
    user("second"),
    assistant(
        {"type": "thinking", "thinking": "signed thought", "thinkingSignature": "sig-1"},
        {"type": "thinking", "thinking": "unsigned thought"},
        {"type": "text", "text": "Working."},
        {"type": "toolCall", "id": "call|abc.1", "name": "read", "arguments": {"path": "a"}},
        {"type": "toolCall", "id": "call_2", "name": "read", "arguments": {"path": "b"}},
    ),
    tool_result("call|abc.1", "contents", image=True),
    user("and?"),
    assistant({"type": "text", "text": "oops"}, stop="aborted"),
    assistant(
        {"type": "thinking", "thinking": "other model thought", "thinkingSignature": "x"},
        model="other",
        stop="stop",
    ),
    user("again"),
]
TOOLS = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]


async def test_request_shape(fake: FakeAnthropic, client: AnthropicMessagesClient) -> None:
    fake.enqueue_stream(anthropic_reply("ok"))
    model = fake.model_info(input=("text", "image"), headers={"anthropic-beta": "x-1"}, max_tokens=64_000)
    await collect(client, make_request(model, CONVERSATION, tools=TOOLS))
    sent = fake.last_request
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["anthropic-beta"] == "x-1"
    body = sent.body
    assert (body["model"], body["stream"], body["system"], body["max_tokens"]) == (
        "fake-model",
        True,
        "Be brief.",
        32_000,
    )
    assert "thinking" not in body and "temperature" not in body
    assert body["tools"] == [
        {
            "name": "read",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "signed thought", "signature": "sig-1"},
                {"type": "text", "text": "Working."},
                {"type": "tool_use", "id": "call_abc_1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "call_2", "name": "read", "input": {"path": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_abc_1",
                    "content": [
                        {"type": "text", "text": "contents"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                        },
                    ],
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "No result provided",
                    "is_error": True,
                },
                {"type": "text", "text": "and?"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "other model thought"}]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]


async def test_base_url_ending_in_v1_is_not_doubled(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_stream(anthropic_reply("ok"))
    await collect(client, make_request(fake.model_info(base_url=f"{fake.origin}/v1/")))
    assert fake.last_request.path == "/v1/messages"


@pytest.mark.parametrize(
    ("level", "model_max", "budget", "max_tokens"),
    [
        ("minimal", 64_000, 1024, 33_024),
        ("low", 64_000, 2048, 34_048),
        ("medium", 64_000, 8192, 40_192),
        ("high", 64_000, 16_384, 48_384),
        ("xhigh", 64_000, 16_384, 48_384),
        ("high", 8192, 7168, 8192),
    ],
)
async def test_thinking_budgets(
    fake: FakeAnthropic,
    client: AnthropicMessagesClient,
    level: ThinkingLevel,
    model_max: int,
    budget: int,
    max_tokens: int,
) -> None:
    fake.enqueue_stream(anthropic_reply("ok"))
    model = fake.model_info(reasoning=True, max_tokens=model_max)
    await collect(client, make_request(model, thinking=level))
    body = fake.last_request.body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == max_tokens


async def test_no_thinking_when_off_or_not_reasoning(
    fake: FakeAnthropic, client: AnthropicMessagesClient
) -> None:
    fake.enqueue_stream(anthropic_reply("a"))
    fake.enqueue_stream(anthropic_reply("b"))
    await collect(client, make_request(fake.model_info(reasoning=True), thinking="off", max_tokens=1000))
    await collect(client, make_request(fake.model_info(reasoning=False), thinking="high"))
    off, plain = (r.body for r in fake.requests)
    assert "thinking" not in off and off["max_tokens"] == 1000
    assert "thinking" not in plain and plain["max_tokens"] == 16_384


def test_normalize_tool_id() -> None:
    assert normalize_tool_id("toolu_01A-b") == "toolu_01A-b"
    assert normalize_tool_id("call|x.y z") == "call_x_y_z"
    long = normalize_tool_id("a" * 100)
    assert len(long) == 64 and long == normalize_tool_id("a" * 100) and long != normalize_tool_id("a" * 101)
    assert normalize_tool_id("").startswith("toolu_")
