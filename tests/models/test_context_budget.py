"""The context budget: the input estimate (reported usage first, a conservative estimate for the
rest, corrected by what the server reported), the output clamp (a share of the window by default)
and the refusal threshold, and how the wire requests honour the clamp."""

from __future__ import annotations

from typing import Any

from fastagent_cli.messages import (
    COMPACTION_SUMMARY_PREFIX,
    AssistantMessage,
    Message,
    UserMessage,
    empty_usage,
)
from fastagent_cli.models.anthropic_request import build_messages_request
from fastagent_cli.models.context_budget import (
    IMAGE_CHARS,
    MAX_CORRECTION,
    MIN_SERVER_RATIO,
    estimate_input_tokens,
    estimate_text,
    fit_request,
    learn_server_ratio,
)
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
    tool = ToolSpec("t", "d" * 39, {})  # "t", "d"*39 and "{}": 1 + 10 + 2
    estimate, uncertain = estimate_input_tokens("s" * 400, [user("a" * 800), image], [tool])
    assert estimate == uncertain == 100 + 200 + IMAGE_CHARS // 4 + 13


def test_the_server_reported_usage_counts_and_only_the_tail_is_guessed() -> None:
    messages: list[Message] = [user("a" * 40), assistant("b" * 40, reported=3000), user("c" * 400)]
    # the server counted 3000 for an estimated 20: what follows is scaled, by at most x4
    assert estimate_input_tokens("", messages) == (3000 + 100 * 4, 100 * 4)
    failed = assistant("", reported=0)
    failed["stopReason"] = "error"
    assert estimate_input_tokens("", [*messages, failed]) == (3400, 400)  # an error reply reports nothing


def test_the_output_is_clamped_and_a_full_window_is_refused() -> None:
    fit = fit_request(SMALL, "", [user("a" * 4000)])
    assert fit.fits and fit.input_tokens == 1000
    assert fit.room == 4096 - 1000 - 64 - 100
    assert fit.max_output == 1024  # a quarter of the window: one answer leaves room for the next turn
    tight = fit_request(SMALL, "", [user("a" * 11000)])
    assert tight.max_output == tight.room == 4096 - 2750 - 64 - 275
    full = fit_request(SMALL, "", [user("a" * 14000)])
    assert not full.fits and full.max_output < full.minimum == 512
    roomy = fit_request(ModelInfo(provider="p", id="m", api="openai-completions"), "", [user("hi")])
    assert roomy.max_output == 16_384  # min(maxTokens, 32000) when the window has room
    asked = fit_request(SMALL, "", [user("hi")], wanted=3000)
    assert asked.max_output == 3000  # an explicit request is only clamped to the room


def test_digits_symbols_and_other_scripts_are_not_underrated() -> None:
    prose = "The quick brown fox jumps over the lazy dog while the cat sleeps in the sun"
    assert estimate_text(prose) == round(len(prose) / 4 + 0.5)  # prose: about four characters a token
    row = "2024-01-15,4711.25,-0.0032,99812,7.5e-3\n"
    dense = sum(c != "e" for c in row)  # every digit, comma, point, minus and newline
    assert estimate_text(row * 100) == 100 * dense + 25  # (the 100 letters e: 25)
    assert estimate_text(row * 100) > 3.5 * len(row * 100) / 4  # not chars/4
    assert estimate_text("数据" * 100) == 300  # two bytes of UTF-8 a token
    assert estimate_text("") == 0


def test_the_server_count_corrects_the_estimate_of_what_follows() -> None:
    csv = "2024-01-15,4711.25,-0.0032\n" * 40
    first = user(csv)
    estimate = estimate_input_tokens("", [first])[0]
    reported = assistant("ok", reported=2 * estimate + 2)  # the server counted twice the guess
    later = user(csv)
    total, uncertain = estimate_input_tokens("", [first, reported, later])
    assert uncertain == 2 * estimate and total == reported["usage"]["totalTokens"] + 2 * estimate
    wild = assistant("ok", reported=100 * estimate)
    assert estimate_input_tokens("", [first, wild, later])[1] == int(MAX_CORRECTION * estimate)
    fewer = assistant("ok", reported=estimate)  # the server counted less than the guess: its count
    assert estimate_input_tokens("", [first, fewer, later])[0] == 2 * estimate
    cheap = assistant("ok", reported=1)  # an implausibly low count: half the estimate at least
    assert estimate_input_tokens("", [first, cheap])[0] == (estimate + 1) // 2


def test_the_server_ratio_measures_a_context_no_answer_reports_on() -> None:
    schema = ToolSpec("t", "d", {"type": "object", "properties": {"a": {"type": "string"}}})
    first = user("a" * 400)  # 100 tokens estimated; the system prompt and the schema 100 + 21
    answer = assistant("b" * 80, reported=0)
    assert learn_server_ratio("s" * 400, [first], [schema], answer) is None  # no usage, nothing learnt
    estimate = estimate_input_tokens("s" * 400, [first], [schema])[0] + 20
    answer = assistant("b" * 80, reported=round(0.75 * estimate))
    assert learn_server_ratio("s" * 400, [first], [schema], answer) == round(0.75 * estimate) / estimate
    wild = assistant("b" * 80, reported=1)
    assert learn_server_ratio("s" * 400, [first], [schema], wild) == MIN_SERVER_RATIO
    aborted = assistant("b" * 80, reported=500)
    aborted["stopReason"] = "aborted"
    assert learn_server_ratio("s" * 400, [first], [schema], aborted) is None

    # After a compaction (the summary stamped 1000) the kept answer (stamped 500) reports a context
    # that is gone: the learnt rate counts the system prompt, the tools, the summary and what was
    # kept; the prompt that came after the compaction is never scaled down.
    summary = user(COMPACTION_SUMMARY_PREFIX + "c" * 400)
    summary["timestamp"] = 1000
    kept = assistant("d" * 400, reported=3000)
    kept["timestamp"] = 500
    prompt = user("e" * 400)
    prompt["timestamp"] = 2000
    context = [summary, kept, prompt]
    bare, uncertain = estimate_input_tokens("s" * 400, context, [schema])
    assert bare == uncertain  # the kept report no longer counts
    before = bare - 100  # all but the prompt
    assert estimate_input_tokens("s" * 400, context, [schema], 0.75) == (
        -(-before * 3 // 4) + 100,
        -(-before * 3 // 4) + 100,
    )
    assert estimate_input_tokens("s" * 400, context, [schema], 2.0)[0] == 2 * bare  # upwards: all of it
    assert estimate_input_tokens("s" * 400, context, [schema], 0.01)[0] == -(-before // 2) + 100
    fit = fit_request(SMALL, "s" * 400, context, [schema], server_ratio=0.75)
    assert fit.input_tokens == -(-before * 3 // 4) + 100
    # where an answer of the context reported usage, its count stands: the ratio plays no part
    fresh = assistant("f" * 40, reported=900)
    fresh["timestamp"] = 3000
    assert estimate_input_tokens("", [*context, fresh], (), 0.75) == estimate_input_tokens(
        "", [*context, fresh]
    )


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
