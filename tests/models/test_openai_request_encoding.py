"""The encoded chat-completions body is the very JSON text of the built body, whatever the
conversation holds, and a conversation's messages are converted once, then reused from its memo."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fastagent_cli.contract import json_text
from fastagent_cli.models import openai_request
from fastagent_cli.models.openai_request import build_chat_request, encode_chat_request
from fastagent_cli.models.types import Message, ModelInfo, ModelRequest
from tests.models.test_openai_chat import CONVERSATION, TOOLS, assistant, tool_result, user

BASE = "http://127.0.0.1:9/v1"


def model(**overrides: Any) -> ModelInfo:
    fields: dict[str, Any] = {"provider": "fake", "id": "fake-model", "api": "openai-completions"}
    fields.update(base_url=BASE, **overrides)
    return ModelInfo(**fields)


OTHER_MODEL_THINKING: list[Message] = [
    user("q"),
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "another model's reasoning"},
            {"type": "thinking", "thinking": "   "},
            {"type": "text", "text": "answer"},
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude",
        "stopReason": "stop",
        "timestamp": 2,
    },  # type: ignore[typeddict-item]
    user("lone \ud800 surrogate and é"),
]
DANGLING_THEN_USER: list[Message] = [
    user("go"),
    assistant({"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}}),
    user("never mind"),
    assistant({"type": "text", "text": "ok"}, stop="aborted"),
    assistant({"type": "toolCall", "id": "c2", "name": "read", "arguments": {}}),
    tool_result("c2", "done"),
    user("and now"),
]

CASES = {
    "conversation": (model(), CONVERSATION),
    "tools-and-reasoning": (model(reasoning=True), CONVERSATION),
    "other-model-thinking": (model(), OTHER_MODEL_THINKING),
    "dangling-calls": (model(), DANGLING_THEN_USER),
    "compat": (
        model(compat={"requiresToolResultName": True, "requiresAssistantAfterToolResult": True}),
        DANGLING_THEN_USER,
    ),
    "openai-ids-and-images": (
        model(provider="openai", input=["text", "image"], reasoning=True),
        [*CONVERSATION, tool_result("call_" + "x" * 50, "long id")],
    ),
    "empty": (model(), []),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_the_encoded_body_is_the_built_body_byte_for_byte(case: str) -> None:
    info, messages = CASES[case]
    for system in ("", "You are terse."):
        request = ModelRequest(info, system, messages, tools=TOOLS, thinking="high", api_key="k", memo={})
        url, headers, body = build_chat_request(request)
        for _ in range(2):  # the second time from the memo
            encoded_url, encoded_headers, encoded = encode_chat_request(request)
            assert (encoded_url, encoded_headers) == (url, headers)
            assert encoded == json_text(body).encode()
            assert json.loads(encoded) == body


async def test_messages_are_converted_once_per_conversation_and_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    converted: list[int] = []
    convert = openai_request._Conversion.convert

    def counting(self: Any, message: Message) -> Any:
        converted.append(id(message))
        return convert(self, message)

    monkeypatch.setattr(openai_request._Conversion, "convert", counting)
    memo: dict[Any, Any] = {}
    history = list(CONVERSATION)
    encode_chat_request(ModelRequest(model(), "", history, memo=memo))
    assert len(converted) == len(history) - 1  # the failed assistant turn is never sent
    converted.clear()
    history.append(user("one more"))
    encode_chat_request(ModelRequest(model(), "", history, memo=memo))
    assert converted == [id(history[-1])]  # only the new message
    converted.clear()
    encode_chat_request(ModelRequest(model(id="another"), "", history, memo=memo))
    assert len(converted) == len(history) - 1  # another model: converted anew
    converted.clear()
    encode_chat_request(ModelRequest(model(), "", history))  # no memo: nothing kept
    encode_chat_request(ModelRequest(model(), "", history))
    assert len(converted) == 2 * (len(history) - 1)


async def test_a_memo_entry_for_another_object_is_never_used() -> None:
    message = user("the real text")
    memo: dict[Any, Any] = {}
    stale = user("a message that is gone")
    key = ("fake", "openai-completions", "fake-model", False, False)
    memo[("openai-completions", id(message))] = (stale, key, ('{"role":"user","content":"WRONG"}', ()))
    _, _, body = encode_chat_request(ModelRequest(model(), "", [message], memo=memo))
    assert json.loads(body)["messages"] == [{"role": "user", "content": "the real text"}]
