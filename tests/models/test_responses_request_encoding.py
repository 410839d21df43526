"""The encoded Responses API body (both dialects) is the very JSON text of the built body,
request after request of a growing conversation, and each message is transformed and converted
once per conversation and model (issue 35: flat along a session)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fastagent_cli.contract import json_text
from fastagent_cli.models import responses_encode, responses_request
from fastagent_cli.models.responses_encode import encode_responses_request
from fastagent_cli.models.responses_request import build_responses_request
from fastagent_cli.models.structured import output_format
from fastagent_cli.models.types import Message, ModelInfo, ModelRequest
from tests.fakes.tokens import codex_jwt
from tests.models.test_anthropic_request_encoding import CALLS_THEN_PROMPTS, DOCUMENTS
from tests.models.test_openai_chat import CONVERSATION, TOOLS, assistant, tool_result, user

SIGNED: list[Message] = [
    user("think first"),
    assistant(
        {
            "type": "thinking",
            "thinking": "Mull.",
            "thinkingSignature": json.dumps({"type": "reasoning", "id": "rs_1"}),
        },
        {"type": "text", "text": "Thought.", "textSignature": '{"v":1,"id":"msg_abc"}'},
        {"type": "text", "text": "No id."},
        {"type": "toolCall", "id": "call_9|fc_9", "name": "read", "arguments": {"path": "z"}},
        stop="toolUse",
    ),
    tool_result("call_9|fc_9", "zz", image=True),
    user("ok"),
]


def model(api: str = "openai-responses", **overrides: Any) -> ModelInfo:
    provider = "openai-codex" if api == "openai-codex-responses" else "fake"
    fields: dict[str, Any] = {"provider": provider, "id": "gpt-5.4", "api": api}
    fields.update(base_url="http://127.0.0.1:9/v1", **overrides)
    return ModelInfo(**fields)


CODEX_KEY = codex_jwt("acct-1")
CASES: dict[str, tuple[ModelInfo, list[Message], str, str]] = {
    "conversation": (model(input=("text", "image")), CONVERSATION, "k", "high"),
    "signed-items": (model(), SIGNED, "k", "high"),
    "reasoning-model": (model(reasoning=True), [*SIGNED, *CONVERSATION], "k", "high"),
    "no-reasoning-note": (model(reasoning=True), CONVERSATION, "k", "off"),
    "calls-then-prompts": (model(), CALLS_THEN_PROMPTS, "k", "high"),
    "documents": (model(input=("text", "image")), DOCUMENTS, "k", "high"),
    "codex": (
        model("openai-codex-responses", reasoning=True),
        [*SIGNED, *CALLS_THEN_PROMPTS],
        CODEX_KEY,
        "high",
    ),
    "empty": (model(), [], "k", "high"),
}


def request(
    info: ModelInfo,
    messages: list[Message],
    key: str,
    thinking: Any,
    memo: dict[Any, Any] | None,
    **more: Any,
) -> ModelRequest:
    return ModelRequest(
        info,
        "Be terse.",
        messages,
        tools=TOOLS,
        thinking=thinking,
        api_key=key,
        memo=memo,
        session_id="s-1",
        **more,
    )


def built(req: ModelRequest) -> tuple[str, dict[str, str], bytes]:
    url, headers, body = build_responses_request(req)
    return url, headers, json_text(body).encode()


@pytest.mark.parametrize("case", list(CASES))
def test_each_request_of_a_growing_conversation_is_the_built_body_byte_for_byte(case: str) -> None:
    info, messages, key, thinking = CASES[case]
    memo: dict[Any, Any] = {}
    for end in range(len(messages) + 1):
        req = request(info, messages[:end], key, thinking, memo)
        assert encode_responses_request(req) == built(req)
        assert encode_responses_request(req) == built(req)  # again, all of it from the memo
    assert json.loads(encode_responses_request(req)[2]) == build_responses_request(req)[2]


def test_without_a_system_prompt_or_with_an_output_schema_the_body_is_the_built_one() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for info in (model(), model("openai-codex-responses")):
        for output in (output_format(schema), None):
            req = ModelRequest(info, "", CONVERSATION, api_key=CODEX_KEY, memo={}, output=output)
            assert encode_responses_request(req) == built(req)


def test_a_rewritten_history_or_another_model_is_encoded_afresh_and_right() -> None:
    memo: dict[Any, Any] = {}
    history = [*SIGNED, *CONVERSATION]
    first = request(model(), history, "k", "high", memo)
    assert encode_responses_request(first) == built(first)
    compacted = [user("summary"), *history[-3:]]
    again = request(model(), compacted, "k", "high", memo)
    assert encode_responses_request(again) == built(again)
    other = request(model(id="gpt-4.1"), compacted, "k", "high", memo)
    assert encode_responses_request(other) == built(other)


def test_messages_are_converted_once_per_conversation_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    converted: list[str] = []
    wire_items = responses_request.wire_items

    def counting(message: Message, index: int, req: ModelRequest) -> Any:
        converted.append(message["role"])
        return wire_items(message, index, req)

    monkeypatch.setattr(responses_encode, "wire_items", counting)
    memo: dict[Any, Any] = {}
    history = list(SIGNED)
    encode_responses_request(request(model(), history, "k", "high", memo))
    assert len(converted) == len(history)
    converted.clear()
    history += [user("one more"), assistant({"type": "text", "text": "sure"}, stop="stop")]
    encode_responses_request(request(model(), history, "k", "high", memo))
    assert converted == ["user", "assistant"]  # only the new messages
    converted.clear()
    encode_responses_request(request(model(id="other"), history, "k", "high", memo))
    assert len(converted) == len(history)  # another model: converted anew
