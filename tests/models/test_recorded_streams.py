"""Streams recorded from a real llama-cpp-python server (SmolLM2-135M, ``chatml-function-calling``),
replayed byte for byte: the client must read what a real third-party server sends, not only what
our fakes send. Recorded with shared/tools/llm-server.sh and curl; see the .sse files."""

from __future__ import annotations

from pathlib import Path

from fastagent_cli.models.openai_chat import OpenAIChatClient
from fastagent_cli.models.types import AssistantMessage, ModelRequest, StreamDelta
from tests.fakes.fake_providers import FakeOpenAI

DATA = Path(__file__).parent / "data"


async def replay(name: str) -> tuple[list[StreamDelta], AssistantMessage]:
    async with FakeOpenAI() as fake:
        fake.enqueue_raw(200, (DATA / name).read_bytes(), content_type="text/event-stream")
        client = OpenAIChatClient()
        try:
            request = ModelRequest(model=fake.model_info(), system="", messages=[])
            items = [item async for item in client.stream(request)]
        finally:
            await client.aclose()
    deltas = [i for i in items if isinstance(i, StreamDelta)]
    final = items[-1]
    assert not isinstance(final, StreamDelta)
    return deltas, final


async def test_a_real_text_stream() -> None:
    deltas, message = await replay("llama_cpp_python_text.sse")
    text = "".join(d.text for d in deltas)
    assert text and message["content"] == [{"type": "text", "text": text}]
    assert message["stopReason"] in ("stop", "length")


async def test_a_real_tool_call_stream_with_legacy_function_call_fields() -> None:
    """llama-cpp-python repeats id and name on every chunk and sends the legacy ``function_call``
    beside ``tool_calls``: only the arguments may be concatenated, once."""
    deltas, message = await replay("llama_cpp_python_tool_call.sse")
    assert deltas == []
    assert message["stopReason"] == "toolUse"
    (call,) = message["content"]
    assert call["type"] == "toolCall" and call["name"] == "get_weather"
    assert call["arguments"] == {"city": "Paris"}
    assert call["id"].startswith("call__0_get_weather")
