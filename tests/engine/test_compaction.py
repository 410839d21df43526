"""Compaction: automatic on the threshold, once on a context-overflow error, manual with
instructions, ``nothing_to_compact``, pi's cut point and summary request, and reading a compacted
session back after a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fastagent_cli.assembly import create_agent
from fastagent_cli.assembly.control import session_control
from fastagent_cli.contract import Completed, Failed, Retrying
from fastagent_cli.control import NOTHING_TO_COMPACT, SessionEvent
from fastagent_cli.engine.agent import EngineAgent
from fastagent_cli.engine.compaction import (
    ALREADY_COMPACTED,
    NOTHING_TO_COMPACT_TEXT,
    OVERFLOW_RECOVERY_FAILED,
    CompactionSettings,
    is_context_overflow,
    prepare_compaction,
)
from fastagent_cli.engine.compaction.summary import (
    SUMMARIZATION_SYSTEM_PROMPT,
    serialize_conversation,
)
from fastagent_cli.errors import ProviderError
from fastagent_cli.models.scripted import ScriptedModel, ScriptedRequest
from fastagent_cli.sessions.record import COMPACTION_SUMMARY_PREFIX
from fastagent_cli.sessions.store import FileSessionStore
from tests.conformance.suite import drain

SUMMARY = "## Goal\nKeep going."


def long(word: str) -> str:
    """A prompt of about 40 tokens: the cut point (30 tokens kept) lands on it, never mid-turn."""
    return f"{word} " + "x" * 160


def word(request: ScriptedRequest) -> str:
    return request.last_user_text.split(" ")[0]


class Model:
    """A scripted model that records requests: summary requests get :data:`SUMMARY`, the others
    ``reply(request)``."""

    def __init__(self, reply: Any = None) -> None:
        self.requests: list[ScriptedRequest] = []
        self.summaries: list[ScriptedRequest] = []
        self.reply = reply or (lambda r: {"text": f"answer {word(r)}"})

    def __call__(self, request: ScriptedRequest) -> Any:
        if request.system == SUMMARIZATION_SYSTEM_PROMPT:
            self.summaries.append(request)
            return SUMMARY
        self.requests.append(request)
        return self.reply(request)


def make_agent(tmp_path: Path, model: Model, **settings: Any) -> EngineAgent:
    agent = create_agent(
        model=ScriptedModel.from_callable(model),
        sessions=FileSessionStore(tmp_path / "sessions", tmp_path),
        cwd=tmp_path,
    )
    agent.config.compaction = CompactionSettings(**{"keep_recent_tokens": 30, **settings})
    return agent


def kinds(agent: EngineAgent, session: str) -> list[str]:
    store = agent.config.sessions
    assert isinstance(store, FileSessionStore)
    import json

    path = store.location(session)
    assert path is not None
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["type"] for line in lines[1:]]


async def watch(agent: EngineAgent, session: str, seen: list[SessionEvent]) -> None:
    async with agent.hub.subscribe(session) as events:
        async for event in events:
            seen.append(event)


def first_text(request: ScriptedRequest) -> str:
    content = request.messages[0]["content"]
    return content if isinstance(content, str) else str(content[0].get("text", ""))


async def test_a_run_compacts_when_the_context_passes_the_threshold(tmp_path: Path) -> None:
    def reply(request: ScriptedRequest) -> Any:
        big = word(request) == "big"
        return {"text": f"answer {word(request)}", "usage": {"input": 120_000 if big else 50}}

    model = Model(reply)
    agent = make_agent(tmp_path, model)
    for text in ("one", "two", "three"):
        await drain(agent.invoke("t", long(text)))
    assert "compaction" not in kinds(agent, "t")
    subscription = agent.hub.subscribe("t")
    events = await drain(agent.invoke("t", long("big")))  # 120 000 > 128 000 - 16 384
    assert isinstance(events[-1], Completed)
    assert kinds(agent, "t")[-1] == "compaction"
    assert len(model.summaries) == 1
    prompt = model.summaries[0].last_user_text
    assert prompt.startswith(f"<conversation>\n[User]: {long('one')}\n\n[Assistant]: answer one")
    assert "## Goal" in prompt and "<previous-summary>" not in prompt
    seen = [await subscription.__anext__() for _ in range(subscription.pending)]
    types = [e.type for e in seen]
    started = next(e for e in seen if e.type == "compaction_started")
    assert started.data["reason"] == "threshold" and started.run_id == seen[0].run_id  # inside the run
    assert started.data["tokens"] > 128_000 - 16_384  # the context's size as the threshold measured it
    finished = next(e for e in seen if e.type == "compaction_finished")
    assert finished.data["tokensBefore"] > finished.data["tokensAfter"] > 0
    assert types[0] == "run_started" and types[-1] == "run_settled"
    assert types.index("message_finished") < types.index("compaction_finished")
    await drain(agent.invoke("t", long("after")))
    after = model.requests[-1]
    assert first_text(after).startswith(COMPACTION_SUMMARY_PREFIX + "<summary>\n" + SUMMARY)


async def test_an_overflow_error_compacts_once_and_the_turn_continues(tmp_path: Path) -> None:
    overflowed: list[int] = []

    def reply(request: ScriptedRequest) -> Any:
        if word(request) == "overflow" and not overflowed:
            overflowed.append(1)
            raise ProviderError("400 prompt is too long: 210000 tokens > 200000 maximum", status=400)
        return {"text": f"answer {word(request)}"}

    model = Model(reply)
    agent = make_agent(tmp_path, model)
    for text in ("one", "two"):
        await drain(agent.invoke("o", long(text)))
    events = await drain(agent.invoke("o", long("overflow")))
    assert isinstance(events[-1], Completed), events[-1]
    assert len(model.summaries) == 1
    retried = model.requests[-1]
    assert word(retried) == "overflow"
    assert first_text(retried).startswith(COMPACTION_SUMMARY_PREFIX)  # the retry ran on the summary
    # the prompt is stored once the model answers it: after the compaction, not summarised by it
    assert kinds(agent, "o")[-3:] == ["compaction", "message", "message"]
    assert long("overflow") not in model.summaries[0].last_user_text


async def test_a_second_overflow_fails_the_run(tmp_path: Path) -> None:
    def reply(request: ScriptedRequest) -> Any:
        if word(request) == "overflow":
            raise ProviderError("400 maximum context length is 8192 tokens", status=400)
        return {"text": "ok"}

    model = Model(reply)
    agent = make_agent(tmp_path, model)
    for text in ("one", "two"):
        await drain(agent.invoke("o2", long(text)))
    events = await drain(agent.invoke("o2", long("overflow")))
    failed = events[-1]
    assert isinstance(failed, Failed)
    assert failed.details.startswith(OVERFLOW_RECOVERY_FAILED) and "8192" in failed.details
    assert (failed.code, failed.retryable) == ("context_overflow", False)
    assert len(model.summaries) == 1  # one compact-and-retry, no more
    assert kinds(agent, "o2")[-1] == "compaction"  # the refused prompt was not stored
    events = await drain(agent.invoke("o2", long("three")))
    assert isinstance(events[-1], Completed)  # so the next turn does not re-send it
    assert all(word(r) != "overflow" for r in model.requests[-1:]) and "overflow" not in str(
        model.requests[-1].messages
    )


async def _finished(seen: list[SessionEvent]) -> SessionEvent:
    for _ in range(200):
        done = [e for e in seen if e.type == "compaction_finished"]
        if done:
            return done[-1]
        await asyncio.sleep(0.01)
    raise AssertionError(f"no compaction_finished in {[e.type for e in seen]}")


async def test_a_manual_compaction_of_a_small_session_summarises_it_whole(tmp_path: Path) -> None:
    # Issue 26: asked to compact, a session smaller than what a compaction keeps compacts (the
    # original did) instead of answering nothing_to_compact; only an empty one has nothing to do.
    model = Model()
    agent = make_agent(tmp_path, model)
    await agent.store.open_or_create("empty")
    empty = await session_control(agent).sessions.get("empty").compact()
    assert (empty.code, empty.error.message) == (NOTHING_TO_COMPACT, NOTHING_TO_COMPACT_TEXT)  # type: ignore[union-attr]
    s = session_control(agent).sessions.get("m")
    await drain(agent.invoke("m", "hello"))  # one short exchange: far below the 30 tokens kept
    seen: list[SessionEvent] = []
    watcher = asyncio.create_task(watch(agent, "m", seen))
    await asyncio.sleep(0)
    assert (await s.compact()).ok
    finished = await _finished(seen)
    watcher.cancel()
    assert finished.data["summary"].startswith(SUMMARY)
    assert "hello" in str(model.summaries[-1].messages)  # the whole exchange was summarised
    record = await agent.store.read("m")
    assert record is not None
    (entry,) = [e for e in record.entries if e["type"] == "compaction"]
    assert entry["firstKeptEntryId"] == entry["id"]  # nothing kept
    (summary,) = record.context().messages  # the context starts with the summary alone
    assert summary["content"][0]["text"].startswith(COMPACTION_SUMMARY_PREFIX)
    again = await s.compact()
    assert (again.code, again.error.message) == (NOTHING_TO_COMPACT, ALREADY_COMPACTED)  # type: ignore[union-attr]
    await drain(agent.invoke("m", "more"))
    after = await agent.store.read("m")
    assert after is not None and [m["role"] for m in after.context().messages] == [
        "user",
        "user",
        "assistant",
    ]


async def test_manual_compaction_with_instructions_and_nothing_to_compact(tmp_path: Path) -> None:
    model = Model()
    agent = make_agent(tmp_path, model)
    s = session_control(agent).sessions.get("m")
    missing = await s.compact()
    assert missing.code == "no_such_session"
    for text in ("one", "two", "three"):
        await drain(agent.invoke("m", long(text)))
    seen: list[SessionEvent] = []
    watcher = asyncio.create_task(watch(agent, "m", seen))
    await asyncio.sleep(0)
    started = await s.compact("keep the decisions")
    assert started.ok and started.run_id is None
    for _ in range(200):
        if any(e.type == "compaction_finished" for e in seen):
            break
        await asyncio.sleep(0.01)
    watcher.cancel()
    assert [e.type for e in seen] == ["compaction_started", "state_changed", "compaction_finished"]
    assert seen[0].data["reason"] == "manual" and seen[0].run_id is None
    assert seen[-1].data["summary"].startswith(SUMMARY)
    assert model.summaries[-1].last_user_text.endswith("Additional focus: keep the decisions")
    leaf = (await s.state()).leaf_entry_id
    assert seen[1].data["leafEntryId"] == leaf  # the compaction entry is the new leaf
    again = await s.compact()
    assert (again.code, again.error.message) == (NOTHING_TO_COMPACT, ALREADY_COMPACTED)  # type: ignore[union-attr]
    state = await s.state()
    assert state.status == "idle" and state.usage is not None and state.usage.context_tokens is None


async def test_a_compacted_session_reads_back_after_a_restart(tmp_path: Path) -> None:
    model = Model()
    agent = make_agent(tmp_path, model)
    for text in ("alpha", "beta", "gamma", "delta"):
        await drain(agent.invoke("r", long(text)))
    assert (await session_control(agent).sessions.get("r").compact()).ok
    for _ in range(200):
        if agent.runs.status("r") == "idle":
            break
        await asyncio.sleep(0.01)
    await agent.aclose()

    restarted_model = Model()
    restarted = make_agent(tmp_path, restarted_model)  # a new process: only the files remain
    events = await drain(restarted.invoke("r", long("epsilon")))
    assert isinstance(events[-1], Completed)
    messages = restarted_model.requests[0].messages
    assert first_text(restarted_model.requests[0]).startswith(COMPACTION_SUMMARY_PREFIX)
    texts = [str(m["content"][0].get("text", "")) for m in messages[1:] if m["role"] == "user"]  # type: ignore[index,union-attr]
    assert texts == [long("delta"), long("epsilon")]  # the rest is in the summary now
    entries = (await session_control(restarted).sessions.get("r").entries()).entries
    assert [e.kind for e in entries].count("compaction") == 1


async def test_summary_retries_surface_as_retry_scheduled(tmp_path: Path) -> None:
    failures: list[int] = []

    def flaky(request: ScriptedRequest) -> Any:
        if request.system == SUMMARIZATION_SYSTEM_PROMPT and not failures:
            failures.append(1)
            raise ProviderError("503 overloaded", status=503, retryable=True, retry_after=0)
        return {"text": "ok"}

    agent = create_agent(
        model=ScriptedModel.from_callable(flaky),
        sessions=FileSessionStore(tmp_path / "s", tmp_path),
        cwd=tmp_path,
    )
    agent.config.compaction = CompactionSettings(keep_recent_tokens=30)
    for text in ("one", "two", "three"):
        await drain(agent.invoke("q", long(text)))
    seen: list[SessionEvent] = []
    watcher = asyncio.create_task(watch(agent, "q", seen))
    await asyncio.sleep(0)
    assert (await session_control(agent).sessions.get("q").compact()).ok
    for _ in range(300):
        if any(e.type == "compaction_finished" for e in seen):
            break
        await asyncio.sleep(0.01)
    watcher.cancel()
    retry = next(e for e in seen if e.type == "retry_scheduled")
    assert retry.data["operation"] == "compaction" and retry.data["attempt"] == 1
    assert "summary" in seen[-1].data


def test_the_cut_point_never_lands_on_a_tool_result_and_splits_turns() -> None:
    def message(i: int, role: str, text: str, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}], **extra}
        return {"type": "message", "id": f"e{i}", "parentId": f"e{i - 1}" if i else None, "message": body}

    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/a.py"}}
    path = [
        message(0, "user", "fix the bug " + "a" * 400),
        message(1, "assistant", "looking"),
        {**message(2, "assistant", ""), "message": {"role": "assistant", "content": [call]}},
        message(3, "toolResult", "b" * 400, toolCallId="c1", toolName="read", isError=False),
        message(4, "assistant", "found it " + "c" * 40),
    ]
    plan = prepare_compaction(path, keep_recent_tokens=20)
    assert not isinstance(plan, str)
    assert plan.first_kept_entry_id == "e4"  # e3 is a tool result: the cut moves on to e4
    assert plan.split_turn and plan.to_summarize == []  # the turn's prefix is summarised apart
    assert [m["role"] for m in plan.turn_prefix] == ["user", "assistant", "assistant", "toolResult"]
    assert plan.read_files == {"src/a.py"}
    assert prepare_compaction(path[:1], keep_recent_tokens=20_000) == NOTHING_TO_COMPACT_TEXT
    text = serialize_conversation(plan.turn_prefix)
    assert '[Assistant tool calls]: read(path="src/a.py")' in text
    assert "[Tool result]: " + "b" * 400 in text


def test_context_overflow_messages() -> None:
    assert is_context_overflow("prompt is too long: 213462 tokens > 200000 maximum")
    assert is_context_overflow("This model's maximum context length is 128000 tokens")
    assert is_context_overflow("413 (no body)")
    assert not is_context_overflow("429 rate limit exceeded")


def test_retrying_projection_names_the_compaction() -> None:
    from fastagent_cli.control.projection import project

    event = SessionEvent(
        "retry_scheduled",
        {"operation": "compaction", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "error": "503"},
        "run",
    )
    assert project(event) == Retrying(1, 3, 2000, "compaction: 503")
