"""The Responses wire client: streams in the wire shape of api.openai.com (``data/openai_responses_*``
files, replayed byte for byte) and built ones, the request in both dialects, history replay."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any, cast

import pytest

from fastagent_cli.errors import ProviderError
from fastagent_cli.models.http_pool import PoolLimits
from fastagent_cli.models.openai_responses import OpenAIResponsesClient
from fastagent_cli.models.responses_request import build_responses_request, normalize_call_id
from fastagent_cli.models.types import (
    AssistantMessage,
    Message,
    ModelInfo,
    ModelRequest,
    StreamDelta,
    ThinkingLevel,
    ToolSpec,
)
from tests.fakes.fake_providers import FakeCall, FakeCodex, FakeResponses
from tests.fakes.responses_builders import responses_reply
from tests.fakes.tokens import codex_jwt

DATA = Path(__file__).parent / "data"
WEATHER = ToolSpec("get_weather", "Current weather for a city.", {"type": "object", "properties": {}})


@pytest.fixture
async def fake() -> AsyncIterator[FakeResponses]:
    async with FakeResponses() as server:
        yield server


@pytest.fixture
async def client() -> AsyncIterator[OpenAIResponsesClient]:
    c = OpenAIResponsesClient(pool=PoolLimits(connect_timeout_s=2, read_timeout_s=5))
    yield c
    await c.aclose()


def user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def request_for(
    model: ModelInfo,
    messages: Sequence[Message] = (),
    *,
    thinking: ThinkingLevel = "low",
    key: str = "sk-test",
    tools: Sequence[ToolSpec] = (WEATHER,),
) -> ModelRequest:
    return ModelRequest(
        model=model,
        system="Be brief.",
        messages=list(messages) or [user("hi")],
        tools=tools,
        thinking=thinking,
        api_key=key,
        session_id="s-1",
    )


async def collect(
    client: OpenAIResponsesClient, request: ModelRequest
) -> tuple[list[StreamDelta], AssistantMessage]:
    items: list[Any] = []
    async with aclosing(client.stream(request)) as stream:  # type: ignore[type-var]
        async for item in stream:
            items.append(item)
    *deltas, final = items
    assert all(isinstance(d, StreamDelta) for d in deltas)
    return cast(list[StreamDelta], deltas), cast(AssistantMessage, final)


async def replay(
    fake: FakeResponses, client: OpenAIResponsesClient, name: str
) -> tuple[list[StreamDelta], AssistantMessage]:
    fake.enqueue_raw(200, (DATA / name).read_bytes(), content_type="text/event-stream")
    return await collect(
        client, request_for(fake.model_info(reasoning=True, cost={"input": 0.25, "output": 2.0}))
    )


def text_of(deltas: list[StreamDelta], kind: str = "text") -> str:
    return "".join(d.text for d in deltas if d.kind == kind)


# ----------------------------------------------------------------------------- recorded streams


async def test_recorded_text_stream(fake: FakeResponses, client: OpenAIResponsesClient) -> None:
    deltas, final = await replay(fake, client, "openai_responses_text.sse")
    assert text_of(deltas) == "Hello! The capital of France is Paris." and not text_of(deltas, "thinking")
    thinking, text = final["content"]
    assert thinking["type"] == "thinking" and thinking["thinking"] == ""
    assert json.loads(thinking["thinkingSignature"])["encrypted_content"].startswith("gAAAA")
    assert text == {
        "type": "text",
        "text": "Hello! The capital of France is Paris.",
        "textSignature": '{"v":1,"id":"msg_0c1f3a9e5b7d40e10068fb1c2c5f7081909f8e7d6c5b4a3928"}',
    }
    assert final["stopReason"] == "stop" and final["api"] == "openai-responses"
    usage = final["usage"]
    assert (usage["input"], usage["output"], usage["totalTokens"]) == (22, 84, 106)
    assert usage["cost"]["total"] == pytest.approx((22 * 0.25 + 84 * 2.0) / 1e6)


async def test_recorded_reasoning_summary_parts(fake: FakeResponses, client: OpenAIResponsesClient) -> None:
    deltas, final = await replay(fake, client, "openai_responses_reasoning.sse")
    expected = (
        "**Comparing the numbers**\n\n9.11 has two decimal places, 9.9 has one.\n\n"
        "**Answering**\n\n0.9 is larger than 0.11, so 9.9 is bigger."
    )
    assert text_of(deltas, "thinking") == expected
    assert [d.kind for d in deltas].index("text") > max(
        i for i, d in enumerate(deltas) if d.kind == "thinking"
    )
    thinking = final["content"][0]
    assert thinking["type"] == "thinking" and thinking["thinking"] == expected
    item = json.loads(thinking["thinkingSignature"])
    assert item["type"] == "reasoning" and item["id"].startswith("rs_") and len(item["summary"]) == 2
    assert text_of(deltas) == "9.9 is larger than 9.11."


async def test_recorded_tool_call(fake: FakeResponses, client: OpenAIResponsesClient) -> None:
    deltas, final = await replay(fake, client, "openai_responses_tool_call.sse")
    assert deltas == []
    call = final["content"][-1]
    assert call == {
        "type": "toolCall",
        "id": "call_Xb4mQ7rT2vLk9PzN1sWcJ8eY|fc_07a6c2d9e8f1b3450068fb1e46f5e081b19d8c7b6a5f4e3d2c",
        "name": "get_weather",
        "arguments": {"city": "Paris", "unit": "celsius"},
    }
    assert final["stopReason"] == "toolUse"


async def test_recorded_error_event_mid_answer(fake: FakeResponses, client: OpenAIResponsesClient) -> None:
    fake.enqueue_raw(
        200, (DATA / "openai_responses_error.sse").read_bytes(), content_type="text/event-stream"
    )
    seen: list[str] = []
    with pytest.raises(ProviderError) as info:
        async with aclosing(client.stream(request_for(fake.model_info()))) as stream:  # type: ignore[type-var]
            async for item in stream:
                seen.append(item.text)
    assert "".join(seen) == "Here is the first part"
    assert info.value.retryable and info.value.message.startswith(
        "fake-responses: server_error: The server had an error processing your request."
    )


async def test_recorded_failed_response(fake: FakeResponses, client: OpenAIResponsesClient) -> None:
    fake.enqueue_raw(
        200, (DATA / "openai_responses_failed.sse").read_bytes(), content_type="text/event-stream"
    )
    with pytest.raises(ProviderError) as info:
        await collect(client, request_for(fake.model_info()))
    assert info.value.retryable and info.value.status == 429
    assert "rate_limit_exceeded: Rate limit reached for gpt-5-mini" in info.value.message


# ----------------------------------------------------------------------------- built streams


async def test_incomplete_response_is_length(fake: FakeResponses, client: OpenAIResponsesClient) -> None:
    fake.enqueue_stream(responses_reply("Cut sh", status="incomplete", final_event="response.incomplete"))
    _, final = await collect(client, request_for(fake.model_info()))
    assert final["stopReason"] == "length" and final["content"][0]["text"] == "Cut sh"


async def test_a_cut_stream_and_an_empty_one_are_retryable(
    fake: FakeResponses, client: OpenAIResponsesClient
) -> None:
    fake.enqueue_cut(responses_reply("never finished")[:5])
    with pytest.raises(ProviderError) as cut:
        await collect(client, request_for(fake.model_info()))
    assert cut.value.retryable
    fake.enqueue_raw(200, b"", content_type="text/event-stream")
    with pytest.raises(ProviderError) as empty:
        await collect(client, request_for(fake.model_info()))
    assert empty.value.retryable and "empty response stream" in empty.value.message


async def test_http_401_keeps_the_provider_message(
    fake: FakeResponses, client: OpenAIResponsesClient
) -> None:
    fake.enqueue_error(
        401, {"error": {"message": "Incorrect API key provided: sk-te**", "type": "invalid_request_error"}}
    )
    with pytest.raises(ProviderError) as info:
        await collect(client, request_for(fake.model_info()))
    assert not info.value.retryable and "401 Unauthorized: Incorrect API key provided" in info.value.message


async def test_request_body_and_headers(fake: FakeResponses, client: OpenAIResponsesClient) -> None:
    fake.enqueue_stream(responses_reply("ok"))
    model = fake.model_info("gpt-5-mini", reasoning=True, headers={"X-Extra": "1"})
    await collect(client, request_for(model, thinking="medium"))
    sent = fake.last_request
    assert sent.path == "/v1/responses" and sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["x-extra"] == "1" and sent.headers["accept"] == "text/event-stream"
    body = sent.body
    assert body["input"][0] == {"role": "developer", "content": "Be brief."}
    assert body["input"][1] == {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert (body["stream"], body["store"], body["prompt_cache_key"]) == (True, False, "s-1")
    assert body["max_output_tokens"] == 16384
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        }
    ]


def test_reasoning_off_on_gpt5_sends_the_no_reasoning_note() -> None:
    model = ModelInfo("openai", "gpt-5", "openai-responses", base_url="http://x/v1", reasoning=True)
    _, _, body = build_responses_request(request_for(model, thinking="off"))
    assert "reasoning" not in body and "include" not in body
    assert body["input"][-1] == {
        "role": "developer",
        "content": [{"type": "input_text", "text": "# Juice: 0 !important"}],
    }
    plain = ModelInfo("local", "llama", "openai-responses", base_url="http://x/v1")
    _, _, body = build_responses_request(request_for(plain, thinking="off"))
    assert body["input"][0] == {"role": "system", "content": "Be brief."} and "reasoning" not in body


async def test_history_replays_reasoning_calls_and_results(
    fake: FakeResponses, client: OpenAIResponsesClient
) -> None:
    model = fake.model_info(reasoning=True)
    call = FakeCall("get_weather", {"city": "Oslo"}, "call_abc")
    fake.enqueue_stream(responses_reply("Checking.", reasoning=["Need weather."], tool_calls=[call]))
    _, first = await collect(client, request_for(model))
    call_block = first["content"][-1]
    assert call_block["type"] == "toolCall" and call_block["id"] == "call_abc|fc_fake2"
    result: Message = {
        "role": "toolResult",
        "toolCallId": call_block["id"],
        "toolName": "get_weather",
        "content": [{"type": "text", "text": '{"temp": 3}'}],
        "isError": False,
        "timestamp": 2,
    }
    fake.enqueue_stream(responses_reply("3 degrees."))
    await collect(client, request_for(model, [user("Oslo?"), first, result]))
    items = fake.last_request.body["input"][2:]
    assert items[0]["type"] == "reasoning" and items[0]["id"] == "rs_fake0"
    assert items[0]["encrypted_content"] == "gAAAAABfake-encrypted-reasoning"
    assert items[1]["type"] == "message" and items[1]["id"] == "msg_fake1"
    assert items[1]["content"] == [{"type": "output_text", "text": "Checking.", "annotations": []}]
    assert items[2] == {
        "type": "function_call",
        "call_id": "call_abc",
        "name": "get_weather",
        "id": "fc_fake2",
        "arguments": '{"city": "Oslo"}',
    }
    assert items[3] == {"type": "function_call_output", "call_id": "call_abc", "output": '{"temp": 3}'}


def test_another_models_history_drops_item_ids_and_reasoning() -> None:
    model = ModelInfo("openai", "gpt-5", "openai-responses", base_url="http://x/v1", reasoning=True)
    other: AssistantMessage = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Mull it over.", "thinkingSignature": "sig"},
            {"type": "toolCall", "id": "call 1|item:2", "name": "get_weather", "arguments": {"city": "Rome"}},
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": {}},  # type: ignore[typeddict-item]
        "stopReason": "toolUse",
        "timestamp": 1,
    }
    _, _, body = build_responses_request(request_for(model, [user("Rome?"), other, user("and?")]))
    thought, call, synthetic, _ = body["input"][2:]
    assert thought["type"] == "message" and thought["content"][0]["text"] == "Mull it over."
    assert call == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Rome"}',
    }
    assert synthetic == {"type": "function_call_output", "call_id": "call_1", "output": "No result provided"}
    assert normalize_call_id("c|item") == "c|fc_item" and normalize_call_id("toolu_01") == "toolu_01"


# ----------------------------------------------------------------------------- Codex dialect


async def test_codex_request_dialect() -> None:
    async with FakeCodex() as fake:
        client = OpenAIResponsesClient()
        try:
            fake.enqueue_stream(responses_reply("hello from codex", reasoning=["Thinking."]))
            model = fake.model_info("gpt-5.4", reasoning=True)
            token = codex_jwt("acct-77")
            deltas, final = await collect(client, request_for(model, thinking="minimal", key=token))
        finally:
            await client.aclose()
    assert text_of(deltas) == "hello from codex" and final["api"] == "openai-codex-responses"
    sent = fake.last_request
    assert sent.path == "/backend-api/codex/responses"
    headers = sent.headers
    assert headers["authorization"] == f"Bearer {token}" and headers["chatgpt-account-id"] == "acct-77"
    assert headers["openai-beta"] == "responses=experimental" and headers["originator"] == "fastagent"
    assert headers["session_id"] == "s-1" and headers["user-agent"].startswith("fastagent (")
    body = sent.body
    assert body["instructions"] == "Be brief." and body["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]
    assert (
        "max_output_tokens" not in body and body["store"] is False and body["text"] == {"verbosity": "medium"}
    )
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}  # gpt-5.4 has no "minimal"
    assert body["tools"][0]["strict"] is None and body["parallel_tool_calls"] is True
    assert body["include"] == ["reasoning.encrypted_content"] and body["prompt_cache_key"] == "s-1"


def test_codex_token_without_an_account_is_refused() -> None:
    model = ModelInfo("openai-codex", "gpt-5.4", "openai-codex-responses", base_url="http://x/backend-api")
    with pytest.raises(ProviderError) as info:
        build_responses_request(request_for(model, key=codex_jwt(None)))
    assert not info.value.retryable
    assert "log in again with `fastagent login openai-codex`" in info.value.message
