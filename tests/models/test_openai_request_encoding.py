"""The encoded chat-completions body is the very JSON text of the built body, whatever the
conversation holds, and a conversation's messages are converted once, then reused from its memo."""

from __future__ import annotations

import json
from dataclasses import replace
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


def fresh_body(request: ModelRequest) -> bytes:
    """The body as built from nothing: the dict form, encoded (what the encoded body must be)."""
    return json_text(build_chat_request(replace(request, memo=None))[2]).encode()


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many messages each conversion walks."""
    counts: list[int] = []
    run = openai_request._Conversion.run

    def counting(self: Any, messages: Any) -> Any:
        counts.append(len(messages))
        return run(self, messages)

    monkeypatch.setattr(openai_request._Conversion, "run", counting)
    return counts


async def test_a_request_that_only_appends_encodes_the_new_messages_alone(walked: list[int]) -> None:
    memo: dict[Any, Any] = {}
    history: list[Message] = []
    for step in [*CONVERSATION, *DANGLING_THEN_USER]:  # a dangling call on either side of the cut
        history = [*history, step]
        for info in (model(), model(compat={"requiresAssistantAfterToolResult": True})):
            walked.clear()
            request = ModelRequest(info, "You are terse.", history, tools=TOOLS, memo=memo)
            encoded = encode_chat_request(request)[2]
            assert walked == [len(history)]  # the compat flag changes the shape: walked anew
            assert encoded == fresh_body(request)
        walked.clear()
        request = ModelRequest(info, "You are terse.", [*history, user("appended")], memo=memo)
        encoded = encode_chat_request(request)[2]
        assert walked == [1]  # only what is new since the last request
        assert encoded == fresh_body(request)


async def test_the_kept_history_is_not_used_for_a_conversation_that_changed(walked: list[int]) -> None:
    memo: dict[Any, Any] = {}
    history = [*CONVERSATION, *DANGLING_THEN_USER]
    summary = user("The conversation history before this point was compacted into the following summary")
    changes = {
        "compacted": [summary, *history[-3:]],
        "another branch": [*history[:4], user("somewhere else")],
        "cut back": history[:5],
        "another model": history,
        "the model again": history,
        "an equal copy": json.loads(json.dumps(history)),
        "an unequal copy": [*history[:-1], user("and now, differently")],
        "empty": [],
    }
    encode_chat_request(ModelRequest(model(), "", history, memo=memo))
    for change, messages in changes.items():
        info = model(id="another") if change == "another model" else model()
        for system in ("", "s"):
            walked.clear()
            request = ModelRequest(info, system, messages, tools=TOOLS, thinking="high", memo=memo)
            encoded = encode_chat_request(request)[2]
            if change == "an equal copy":
                assert walked == [0]  # equal messages have the same wire form
            elif system == "":
                assert walked == [len(messages)], change
            assert encoded == fresh_body(request), change
