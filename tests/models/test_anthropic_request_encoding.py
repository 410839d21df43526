"""The encoded Messages API body is the very JSON text of the built body, request after request
of a growing conversation, and each message is transformed and converted once per conversation
and model, not once per request (issue 35: flat along a session)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fastagent_cli.contract import json_text
from fastagent_cli.models import anthropic_encode, anthropic_request
from fastagent_cli.models.anthropic_encode import encode_messages_request
from fastagent_cli.models.anthropic_request import build_messages_request
from fastagent_cli.models.structured import output_format
from fastagent_cli.models.types import Message, ModelInfo, ModelRequest, ToolSpec
from tests.models.test_anthropic_messages import CONVERSATION, TOOLS, assistant, tool_result, user


def model(**overrides: Any) -> ModelInfo:
    fields: dict[str, Any] = {"provider": "fake", "id": "fake-model", "api": "anthropic-messages"}
    fields.update(base_url="http://127.0.0.1:9", **overrides)
    return ModelInfo(**fields)


def prompt_with(*blocks: Any) -> Message:
    return {"role": "user", "content": list(blocks), "timestamp": 5}


CALLS_THEN_PROMPTS: list[Message] = [
    user("go"),
    assistant({"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}}),
    user("never mind"),  # c1 unanswered: an error result first, merged with this prompt
    assistant({"type": "text", "text": "ok"}, stop="error"),
    assistant({"type": "toolCall", "id": "c 2", "name": "read", "arguments": {}}),
    tool_result("c 2", "done"),
    user("and now"),  # merged into the tool result's user turn
    prompt_with({"type": "text", "text": "   "}),  # no blocks at all: skipped
    assistant({"type": "toolCall", "id": "c3", "name": "read", "arguments": {"path": "é \ud800"}}),
]
DOCUMENTS: list[Message] = [
    prompt_with(
        {"type": "text", "text": "see"},
        {"type": "image", "data": "QUJD", "mimeType": "image/png"},
        {"type": "document", "data": "JVBERi0=", "mimeType": "application/pdf", "name": "a.pdf"},
    ),
    assistant({"type": "text", "text": "seen"}, stop="stop"),
]

CASES: dict[str, tuple[ModelInfo, list[Message], str]] = {
    "conversation": (model(input=("text", "image")), CONVERSATION, "sk-ant-key"),
    "calls-then-prompts": (model(), CALLS_THEN_PROMPTS, "sk-ant-key"),
    "reasoning": (model(reasoning=True, max_tokens=64_000), CONVERSATION, "sk-ant-key"),
    "claude-code": (model(), [*CONVERSATION, *CALLS_THEN_PROMPTS], "sk-ant-oat01-token"),
    "documents": (model(input=("text", "image")), DOCUMENTS, "sk-ant-key"),  # PDFs as documents
    "documents-as-notes": (model(compat={"supportsPdf": False}), DOCUMENTS, "sk-ant-key"),
    "empty": (model(), [], "sk-ant-key"),
}


def request(
    info: ModelInfo, messages: list[Message], key: str, memo: dict[Any, Any] | None, **more: Any
) -> ModelRequest:
    return ModelRequest(
        info, "Be terse.", messages, tools=TOOLS, thinking="high", api_key=key, memo=memo, **more
    )


def built(req: ModelRequest) -> tuple[str, dict[str, str], bytes]:
    url, headers, body = build_messages_request(req)
    return url, headers, json_text(body).encode()


@pytest.mark.parametrize("case", list(CASES))
def test_each_request_of_a_growing_conversation_is_the_built_body_byte_for_byte(case: str) -> None:
    info, messages, key = CASES[case]
    memo: dict[Any, Any] = {}
    for end in range(len(messages) + 1):  # one request per message appended, one memo throughout
        req = request(info, messages[:end], key, memo)
        assert encode_messages_request(req) == built(req)
        assert encode_messages_request(req) == built(req)  # again, all of it from the memo
    assert json.loads(encode_messages_request(req)[2]) == build_messages_request(req)[2]


def test_a_structured_request_and_a_system_less_one_keep_the_key_order() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for output in (output_format(schema), None):
        for system in ("", "sys"):
            req = ModelRequest(model(), system, CONVERSATION, api_key="sk-ant-key", memo={}, output=output)
            assert encode_messages_request(req) == built(req)
    bare = ModelRequest(model(), "", [user("hi")], tools=[ToolSpec("t", "d", {"type": "object"})], memo={})
    assert encode_messages_request(bare) == built(bare)


def test_a_rewritten_history_or_another_model_is_encoded_afresh_and_right() -> None:
    memo: dict[Any, Any] = {}
    history = [*CONVERSATION, *CALLS_THEN_PROMPTS]
    first = request(model(), history, "sk-ant-key", memo)
    assert encode_messages_request(first) == built(first)
    compacted = [user("summary of what came before"), *history[-3:]]  # not an append: afresh
    again = request(model(), compacted, "sk-ant-key", memo)
    assert encode_messages_request(again) == built(again)
    other = request(model(id="other"), compacted, "sk-ant-key", memo)  # another model's thinking
    assert encode_messages_request(other) == built(other)
    oauth = request(model(id="other"), compacted, "sk-ant-oat01-token", memo)  # Claude Code names
    assert encode_messages_request(oauth) == built(oauth)


def test_messages_are_converted_once_per_conversation_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    converted: list[str] = []
    wire_turn = anthropic_request.wire_turn

    def counting(message: Message, req: ModelRequest, claude_code: bool) -> Any:
        converted.append(message["role"])
        return wire_turn(message, req, claude_code)

    monkeypatch.setattr(anthropic_encode, "wire_turn", counting)
    memo: dict[Any, Any] = {}
    history = list(CALLS_THEN_PROMPTS)
    encode_messages_request(request(model(), history, "sk-ant-key", memo))
    assert len(converted) == len(history)  # less the failed turn, plus c1's error result
    converted.clear()
    history.append(tool_result("c3", "read"))
    history.append(user("one more"))
    encode_messages_request(request(model(), history, "sk-ant-key", memo))
    assert converted == ["toolResult", "user"]  # only the new messages
    converted.clear()
    encode_messages_request(request(model(id="another"), history, "sk-ant-key", memo))
    assert len(converted) == len(history)  # another model: converted anew
    converted.clear()
    encode_messages_request(request(model(), history, "sk-ant-key", None))  # no memo: nothing kept
    encode_messages_request(request(model(), history, "sk-ant-key", None))
    assert len(converted) == 2 * len(history)
