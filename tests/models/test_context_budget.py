"""The context budget: the input estimate (reported usage first, four characters a token for the
rest), the output clamp and the refusal threshold, and how the wire requests honour the clamp."""

from __future__ import annotations

from typing import Any

from fastagent_cli.messages import AssistantMessage, Message, UserMessage, empty_usage
from fastagent_cli.models.anthropic_request import build_messages_request
from fastagent_cli.models.context_budget import IMAGE_CHARS, estimate_input_tokens, fit_request
from fastagent_cli.models.openai_request import build_chat_request
from fastagent_cli.models.types import ModelInfo, ModelRequest, ToolSpec

SMALL = ModelInfo(
    provider="local", id="small", api="openai-completions", base_url="http://x/v1", context_window=4096
)


def user(text: str) -> UserMessage:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}


def assistant(text: str, reported: int = 0) -> AssistantMessage:
    usage = empty_usage()
    usage["input"], usage["totalTokens"] = reported, reported
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "openai-completions",
        "provider": "local",
        "model": "small",
        "usage": usage,
        "stopReason": "stop",
        "timestamp": 0,
    }


def test_characters_are_counted_four_to_a_token_and_images_flat() -> None:
    image: UserMessage = {
        "role": "user",
        "content": [{"type": "image", "data": "x" * 9000, "mimeType": "image/png"}],
        "timestamp": 0,
    }
    tool = ToolSpec("t", "d" * 39, {})
    estimate, uncertain = estimate_input_tokens("s" * 400, [user("a" * 800), image], [tool])
    assert estimate == uncertain == 100 + 200 + IMAGE_CHARS // 4 + 11


def test_the_server_reported_usage_counts_and_only_the_tail_is_guessed() -> None:
    messages: list[Message] = [user("a" * 40), assistant("b" * 40, reported=3000), user("c" * 400)]
    assert estimate_input_tokens("", messages) == (3100, 100)
    failed = assistant("", reported=0)
    failed["stopReason"] = "error"
    assert estimate_input_tokens("", [*messages, failed]) == (3100, 100)  # an error reply reports nothing


def test_the_output_is_clamped_and_a_full_window_is_refused() -> None:
    fit = fit_request(SMALL, "", [user("a" * 4000)])
    assert fit.fits and fit.input_tokens == 1000
    assert fit.max_output == fit.room == 4096 - 1000 - 64 - 100
    full = fit_request(SMALL, "", [user("a" * 14000)])
    assert not full.fits and full.max_output < full.minimum == 512
    roomy = fit_request(ModelInfo(provider="p", id="m", api="openai-completions"), "", [user("hi")])
    assert roomy.max_output == 16_384  # min(maxTokens, 32000) when the window has room


def _request(**fields: Any) -> ModelRequest:
    return ModelRequest(model=fields.pop("model", SMALL), system="", messages=[user("hi")], **fields)


def test_the_wire_requests_never_ask_for_more_than_the_window_leaves() -> None:
    assert build_chat_request(_request(output_limit=1200))[2]["max_tokens"] == 1200
    assert build_chat_request(_request())[2]["max_tokens"] == 16_384
    claude = ModelInfo(
        provider="anthropic", id="c", api="anthropic-messages", reasoning=True, max_tokens=64_000
    )
    roomy = build_messages_request(_request(model=claude, thinking="high", output_limit=150_000))[2]
    assert (roomy["max_tokens"], roomy["thinking"]["budget_tokens"]) == (32_000 + 16_384, 16_384)
    tight = build_messages_request(_request(model=claude, thinking="high", output_limit=10_000))[2]
    assert tight["max_tokens"] == 10_000 and tight["thinking"]["budget_tokens"] == 10_000 - 1024
