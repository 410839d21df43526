"""Flat along a session (issue 35): a turn counts only the messages that are new since the last
measure and encodes only the new part of the request, and the numbers and bytes are those of a
fresh build at every request of a real session: across appends, a tool round, a model switch and
back, a move to another branch, a compaction and a restart of the server over the same store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, json_text
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.compaction import CompactionSettings
from fastagent_cli.engine.compaction.summary import SUMMARIZATION_SYSTEM_PROMPT
from fastagent_cli.models import context_budget, openai_chat, token_counts
from fastagent_cli.models.openai_request import build_chat_request
from fastagent_cli.models.registry import ModelRegistry
from fastagent_cli.models.token_counts import TokenCounts
from fastagent_cli.models.types import ModelRequest
from fastagent_cli.sessions.store import FileSessionStore
from tests.conformance.suite import drain
from tests.engine.test_wire_end_to_end import FAST_RETRY, get_weather
from tests.fakes.fake_providers import FakeOpenAI
from tests.fakes.wire_builders import FakeCall, openai_reply

WINDOW = 100_000
FULL = 90_000
"""A reported context past the compaction threshold (window - 16 384 reserved)."""


class Checks:
    """Every request body and every token count of the run, compared with a fresh build."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bodies = 0
        self.estimates = 0
        self.counted = 0
        """Messages the kept counts had to count (the new ones)."""
        self.fresh = False
        """Counting afresh, to compare (not what the engine counted)."""
        estimate_tokens = token_counts.estimate_tokens
        encode = openai_chat.encode_chat_request
        of = TokenCounts.of
        estimate_input = context_budget.estimate_input_tokens

        def checked_encode(request: ModelRequest) -> tuple[str, dict[str, str], bytes]:
            url, headers, body = encode(request)
            fresh = build_chat_request(replace(request, memo=None))
            assert (url, headers, body) == (fresh[0], fresh[1], json_text(fresh[2]).encode())
            self.bodies += 1
            return url, headers, body

        def counting(message: Any) -> int:
            self.counted += 0 if self.fresh else 1
            return estimate_tokens(message)

        def checked_of(counts: TokenCounts, messages: Sequence[Any]) -> list[int]:
            kept = of(counts, messages)
            assert list(kept) == [estimate_tokens(m) for m in messages]
            return kept

        def checked_estimate(*args: Any, **kwargs: Any) -> tuple[int, int]:
            got = estimate_input(*args, **kwargs)
            kwargs.pop("counts", None)
            self.fresh = True
            try:
                assert got == estimate_input(*args[:4], **kwargs)  # (counts is the fifth)
            finally:
                self.fresh = False
            self.estimates += 1
            return got

        monkeypatch.setattr(openai_chat, "encode_chat_request", checked_encode)
        monkeypatch.setattr(token_counts, "estimate_tokens", counting)
        monkeypatch.setattr(TokenCounts, "of", checked_of)
        monkeypatch.setattr(context_budget, "estimate_input_tokens", checked_estimate)


class Model:
    """The fake server's answers: a tool call when asked about the weather, a summary for a
    compaction, otherwise a short answer with its reasoning (which the wire form of another model
    carries as text) reporting a context of ``reported`` tokens."""

    def __init__(self) -> None:
        self.reported = 200
        self.summaries = 0

    def __call__(self, body: Any) -> list[dict[str, Any]]:
        messages = body["messages"]
        if messages[0]["content"] == SUMMARIZATION_SYSTEM_PROMPT:
            self.summaries += 1
            return openai_reply("## Goal\nKeep going.", usage=(300, 10))
        last = messages[-1]
        if last["role"] == "user" and "weather" in str(last["content"]):
            call = FakeCall("get_weather", {"city": "Paris"}, f"call_{len(messages)}")
            return openai_reply(tool_calls=[call], usage=(self.reported, 5))
        text = f"answer {len(messages)}: sunny, 21°C"
        return openai_reply(text, reasoning="(another model reads this as text)", usage=(self.reported, 5))


def start(fake: FakeOpenAI, tmp_path: Path) -> EngineAgent:
    models = tmp_path / "models.json"
    entries = [{"id": name, "contextWindow": WINDOW} for name in ("fake-model", "other-model")]
    provider = {"baseUrl": fake.base_url, "api": "openai-completions", "apiKey": "k", "models": entries}
    models.write_text(json.dumps({"providers": {"fake": provider}}))
    agent = create_agent(
        model="fake/fake-model",
        instructions="You are terse.",
        tools=[get_weather],
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        registry=ModelRegistry(models),
        retry=FAST_RETRY,
        cwd=tmp_path,
    )
    agent.config.compaction = CompactionSettings(keep_recent_tokens=40)
    return agent


async def ask(agent: EngineAgent, text: str) -> None:
    events = await drain(agent.invoke("s", text))
    assert isinstance(events[-1], Completed), events[-1]


async def test_the_kept_counts_and_request_prefix_match_a_fresh_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks = Checks(monkeypatch)
    model = Model()
    async with FakeOpenAI() as fake:
        fake.respond_with(model)
        agent = start(fake, tmp_path)
        try:
            for i in range(3):
                await ask(agent, f"question {i}")
            await ask(agent, "and the weather in Paris?")  # a tool round: calls, results
            for i in range(3, 9):  # appends: only the new messages are counted
                before = checks.counted
                await ask(agent, f"question {i} " + "x" * (i * 40))
                assert checks.counted - before <= 3
            store = agent.store
            record = await store.open_if_exists("s")
            assert record is not None
            record.append("model_change", provider="fake", modelId="other-model")
            await ask(agent, "on the other model")
            record = await store.open_if_exists("s")
            assert record is not None
            record.append("model_change", provider="fake", modelId="fake-model")
            await ask(agent, "and back")
            record = await store.open_if_exists("s")
            assert record is not None
            answers = [e for e in record.path() if e.get("message", {}).get("role") == "assistant"]
            assert record.move_leaf(answers[2]["id"])  # back to the third answer: another branch
            await ask(agent, "a different way from there")
            await ask(agent, "and on")
            model.reported = FULL
            await ask(agent, "a long one")  # past the threshold: the run compacts after it
            model.reported = 400
            record = await store.open_if_exists("s")
            assert record is not None and model.summaries >= 1
            assert [e["type"] for e in record.path()].count("compaction") == 1
            await ask(agent, "after the compaction")
            await ask(agent, "and the weather again?")
        finally:
            await agent.aclose()
        bodies = checks.bodies
        agent = start(fake, tmp_path)  # a restart: the counts and the prefix are built anew
        try:
            await ask(agent, "after the restart")
            await ask(agent, "once more")
        finally:
            await agent.aclose()
        assert checks.bodies > bodies
        sent = [r for r in fake.requests if r.body["messages"][0]["content"] != SUMMARIZATION_SYSTEM_PROMPT]
        assert len(sent) + model.summaries == checks.bodies and checks.estimates > 3 * len(sent)
        assert {r.body["model"] for r in sent} == {"fake-model", "other-model"}
