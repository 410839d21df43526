"""The per-message counts a conversation keeps across its requests (:class:`TokenCounts`): the
same numbers as counting afresh, whatever happened to the conversation since the last measure
(it grew, it was cut back, compacted, moved to another branch, copied), with only the new messages
counted when it just grew."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fastagent_cli.messages import COMPACTION_SUMMARY_PREFIX, Message
from fastagent_cli.models import token_counts
from fastagent_cli.models.context_budget import (
    context_tokens,
    estimate_input_tokens,
    fit_request,
    learn_server_ratio,
)
from fastagent_cli.models.token_counts import TokenCounts, conversation_counts, estimate_tokens
from fastagent_cli.models.types import ToolSpec
from tests.models.test_context_budget import SMALL, assistant, user

TOOLS = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})]


def call(call_id: str) -> Message:
    return {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "the file, then"},
            {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": "a,b;c.csv"}},
        ],
        "api": "openai-completions",
        "provider": "local",
        "model": "small",
        "stopReason": "toolUse",
        "timestamp": 5,
    }  # type: ignore[typeddict-item]


def result(call_id: str) -> Message:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": [
            {"type": "text", "text": "1,2,3\n4,5,6\n"},
            {"type": "image", "data": "AA", "mimeType": "image/png"},
        ],
        "isError": False,
        "timestamp": 6,
    }


def conversation(turns: int) -> list[Message]:
    messages: list[Message] = []
    for i in range(turns):
        messages += [user(f"question {i}: ünïcode 数字 {i * 7}"), call(f"c{i}"), result(f"c{i}")]
        messages.append(assistant(f"answer {i}", reported=40 * (i + 1)))
    return messages


def fresh(messages: list[Message]) -> list[int]:
    return [estimate_tokens(m) for m in messages]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids of the messages :class:`TokenCounts` counts."""
    seen: list[int] = []
    estimate = token_counts.estimate_tokens

    def counting(message: Any) -> int:
        seen.append(id(message))
        return estimate(message)

    monkeypatch.setattr(token_counts, "estimate_tokens", counting)
    return seen


def test_a_growing_conversation_counts_each_message_once(counted: list[int]) -> None:
    counts = TokenCounts()
    history = conversation(3)
    assert counts.of(history) == fresh(history)
    assert len(counted) == len(history)
    for turn in range(3, 6):
        counted.clear()
        added = conversation(turn + 1)[-4:]
        history = [*history, *added]  # a new list of the same objects: the next request's
        assert counts.of(history) == fresh(history)
        assert counted == [id(m) for m in added]


def test_a_start_of_the_conversation_is_read_from_the_kept_counts(counted: list[int]) -> None:
    counts = TokenCounts()
    history = conversation(4)
    counts.of(history)
    counted.clear()
    for size in (0, 1, 7, len(history)):
        assert counts.of(history[:size]) == fresh(history[:size])
    assert tuple(counts.of(tuple(history))) == tuple(fresh(history))  # any sequence
    assert counted == []
    longer = [*history, user("and then")]  # the kept conversation is still the whole one
    counts.of(longer)
    assert counted == [id(longer[-1])]


def test_a_changed_conversation_is_counted_afresh() -> None:
    counts = TokenCounts()
    history = conversation(4)
    counts.of(history)
    summary = user(f"{COMPACTION_SUMMARY_PREFIX}<summary>\nthe story so far\n</summary>")
    compacted = [summary, *history[-6:], user("next")]
    assert counts.of(compacted) == fresh(compacted)
    branch = [*history[:5], user("another way"), assistant("elsewhere", reported=77)]
    assert counts.of(branch) == fresh(branch)
    edited = copy.deepcopy(branch)
    edited[1]["content"][1]["arguments"] = {"path": "x" * 300}  # type: ignore[index,typeddict-item]
    assert counts.of(edited) == fresh(edited)  # an unequal copy: counted, not taken
    assert counts.of(copy.deepcopy(edited)) == fresh(edited)  # an equal copy counts the same
    assert counts.of([]) == []


def test_the_estimates_are_the_same_numbers_with_the_kept_counts() -> None:
    memo: dict[Any, Any] = {}
    counts = conversation_counts(memo)
    assert counts is not None and conversation_counts(memo) is counts  # one per conversation
    assert conversation_counts(None) is None
    history: list[Message] = []
    summary = user(f"{COMPACTION_SUMMARY_PREFIX}<summary>\nso far\n</summary>")
    summary["timestamp"] = 4
    steps = [*conversation(5), user("no report after this"), call("z"), result("z")]
    for step in steps:
        history = [*history, step]
        for ratio in (None, 0.7, 1.6):
            for system, tools in (("", []), ("You are terse.", TOOLS)):
                assert estimate_input_tokens(system, history, tools, ratio, counts) == estimate_input_tokens(
                    system, history, tools, ratio
                )
                assert context_tokens(history, system, tools, ratio, counts) == context_tokens(
                    history, system, tools, ratio
                )
                assert fit_request(SMALL, system, history, tools, None, ratio, counts) == fit_request(
                    SMALL, system, history, tools, None, ratio
                )
        answer = assistant("the answer", reported=900)
        assert learn_server_ratio("s", history, TOOLS, answer, counts) == learn_server_ratio(
            "s", history, TOOLS, answer
        )
    compacted = [summary, *history[-5:]]  # after a compaction: the server ratio stands in
    for ratio in (None, 0.6, 2.0):
        assert estimate_input_tokens("s", compacted, TOOLS, ratio, counts) == estimate_input_tokens(
            "s", compacted, TOOLS, ratio
        )
