"""A local model with a 4 096-token window, driven as a user does (``fastagent invoke`` against a
llama-server-like fake with a tokenizer of its own, :mod:`tests.fakes.small_window`), with the
default compaction settings: a long conversation keeps going through automatic compactions (and
says so on stderr), a digit-dense paste that the server refuses is not stored, and a rambling
first answer leaves room for the second turn."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fastagent_cli.assembly import open_agent_dir
from fastagent_cli.contract import Completed
from fastagent_cli.control import SessionEvent
from tests.conformance.suite import drain
from tests.conftest import AgentFactory, RunCli, record_files
from tests.fakes.fake_providers import FakeOpenAI
from tests.fakes.small_window import SmallWindowModel

WINDOW = 4096
QUESTION = (
    "Tell me more about the next step of the plan, what could go wrong with it, and how we would "
    "notice it early; keep the earlier answers in mind when you reply to this question please. "
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def small_agent(make_agent: AgentFactory, base_url: str) -> Path:
    models = {
        "providers": {"local": {"baseUrl": base_url, "models": [{"id": "small", "contextWindow": WINDOW}]}}
    }
    return make_agent(
        {"models.json": json.dumps(models)}, model="local/small", config="coding_tools = false\n"
    )


TRIP_TOOL = '''"""A tool with a heavy schema: many documented parameters (as many MCP tools have)."""

from fastagent_cli import tool


@tool
async def plan_trip(
    origin: str,
    destination: str,
    depart_date: str,
    return_date: str,
    travellers: int = 1,
    budget_eur: int = 1000,
    cabin: str = "economy",
    hotel_stars: int = 3,
    rail_first: bool = False,
    dietary_needs: str = "",
    accessibility: str = "",
    notes: str = "",
) -> str:
    """Plan a trip: transport, lodging and a day-by-day outline, within the budget given.

    Args:
        origin: The city the travellers leave from, as "City, Country" (for example "Lyon, France").
        destination: The city they travel to, in the same "City, Country" form as the origin.
        depart_date: The day of departure, as an ISO date (YYYY-MM-DD), on or after today.
        return_date: The day of return, as an ISO date (YYYY-MM-DD), on or after depart_date.
        travellers: How many people travel together (1 to 9); children count as travellers.
        budget_eur: The total budget in euros for transport and lodging, all travellers included.
        cabin: The flight cabin when flying: "economy", "premium", "business" or "first".
        hotel_stars: The least hotel category wanted, from 1 to 5 stars.
        rail_first: Prefer trains over flights whenever the rail journey takes under six hours.
        dietary_needs: Dietary needs to plan meals around ("vegetarian", "gluten-free", ...).
        accessibility: Accessibility needs (step-free access, a wheelchair, assistance at stations).
        notes: Anything else the planner should know, in the travellers' own words.
    """
    return f"planned {origin} -> {destination}"
'''


def heavy_agent(make_agent: AgentFactory, base_url: str) -> Path:
    """The coding tools and a schema-heavy tool of its own: the fixed part of every request is
    about half the window, as with a real agent on a 4 096-token local model."""
    models = {
        "providers": {"local": {"baseUrl": base_url, "models": [{"id": "small", "contextWindow": WINDOW}]}}
    }
    return make_agent(
        {"models.json": json.dumps(models), "tools/plan_trip.py": TRIP_TOOL}, model="local/small"
    )


async def invoke(run_cli: RunCli, *args: str) -> Any:
    return await asyncio.to_thread(run_cli, "invoke", *args)


def entries(agent: Path) -> list[dict[str, Any]]:
    (path,) = record_files(agent / ".fastagent" / "sessions")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def user_texts(agent: Path) -> list[str]:
    return [
        "".join(b.get("text", "") for b in e["message"]["content"])
        for e in entries(agent)
        if e["type"] == "message" and e["message"]["role"] == "user"
    ]


@pytest.mark.timeout(240)  # a few CLI processes: minutes on a loaded machine
async def test_twenty_turns_stay_usable_through_automatic_compaction(
    make_agent: AgentFactory, fake: FakeOpenAI
) -> None:
    """In process (the assembled agent chat and serve run, over HTTP): twenty CLI processes would
    take minutes on a loaded machine; the invoke tests below show the same from the CLI."""
    model = SmallWindowModel(WINDOW, script=lambda prompt: 260, summary_tokens=400)
    model.attach(fake)
    opened = open_agent_dir(small_agent(make_agent, fake.base_url))
    seen: list[SessionEvent] = []
    events = opened.control.sessions.get("long").events()

    async def watch() -> None:
        async for event in events:
            if event.type.startswith("compaction"):
                seen.append(event)

    watcher = asyncio.create_task(watch())
    try:
        for turn in range(1, 21):
            terminal = (await drain(opened.agent.invoke("long", f"{turn}. {QUESTION * 2}")))[-1]
            assert isinstance(terminal, Completed), f"turn {turn}: {terminal}"
        agent = opened.agent_dir
    finally:
        watcher.cancel()
        await opened.aclose()
    compactions = [e for e in entries(agent) if e["type"] == "compaction"]
    assert len(compactions) >= 3  # the window filled several times over
    assert model.summaries >= len(compactions)
    assert not [s for s in model.seen if s[2]]  # the server never refused a request as too long
    assert all(prompt + asked <= WINDOW for prompt, asked, _ in model.seen)  # nor got one it could not finish
    started = [e.data for e in seen if e.type == "compaction_started"]
    finished = [e.data for e in seen if e.type == "compaction_finished"]
    assert len(started) == len(finished) == len(compactions)
    # ``tokens``: the context before the turn's prompt, which may itself push it past the threshold
    assert all(s["reason"] == "threshold" and s["tokens"] > WINDOW // 2 for s in started)
    assert all(f["tokensAfter"] < f["tokensBefore"] for f in finished)
    last_turn = [t for t in user_texts(agent) if t.startswith("20. ")]
    assert len(last_turn) == 1


@pytest.mark.timeout(240)
async def test_twenty_turns_with_heavy_tool_schemas_stay_usable_through_compaction(
    make_agent: AgentFactory, fake: FakeOpenAI
) -> None:
    """The server counts the system prompt and the tool schemas at about three quarters of the
    estimate (:mod:`tests.fakes.small_window`, ``fixed_chars_per_token=4``). A compaction leaves no
    answer whose usage measures the context; the estimate alone would then leave no room for an
    answer and refuse every later turn. What the server counted against the estimate at the last
    report (learnt again from the record, by a new agent each turn, as ``invoke`` runs) measures
    it instead."""
    model = SmallWindowModel(WINDOW, script=lambda prompt: 260, summary_tokens=400, fixed_chars_per_token=4)
    model.attach(fake)
    agent = heavy_agent(make_agent, fake.base_url)
    for turn in range(1, 21):
        opened = open_agent_dir(agent)  # a new agent reads the session from its file
        try:
            terminal = (await drain(opened.agent.invoke("heavy", f"{turn}. {QUESTION}")))[-1]
        finally:
            await opened.aclose()
        assert isinstance(terminal, Completed), f"turn {turn}: {terminal}"
    records = entries(agent)
    compactions = [e for e in records if e["type"] == "compaction"]
    assert len(compactions) >= 2
    assert not [s for s in model.seen if s[2]]  # the server never refused a request as too long
    assert all(prompt + asked <= WINDOW for prompt, asked, _ in model.seen)
    assert len([t for t in user_texts(agent) if t.startswith("20. ")]) == 1


@pytest.mark.timeout(240)  # a few CLI processes: minutes on a loaded machine
async def test_compaction_is_a_note_on_stderr_of_invoke(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    model = SmallWindowModel(WINDOW, script=lambda prompt: 700, summary_tokens=200)
    model.attach(fake)
    agent = small_agent(make_agent, fake.base_url)
    notes: list[str] = []
    for turn in range(1, 5):
        done = await invoke(run_cli, f"{turn}. {QUESTION}", str(agent), "--session", "n")
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("words words") and "compact" not in done.stdout
        notes += [line for line in done.stderr.splitlines() if line.startswith("[fastagent] compact")]
    assert [e for e in entries(agent) if e["type"] == "compaction"]
    assert notes[0].startswith("[fastagent] compacting the conversation (") and notes[0].endswith(
        " tokens)..."
    )
    assert notes[1].startswith("[fastagent] compacted the conversation: ")
    assert "-> about" in notes[1] and "tokens; older history is now a " in notes[1]


@pytest.mark.timeout(240)  # a few CLI processes: minutes on a loaded machine
async def test_compaction_events_in_invoke_json(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    model = SmallWindowModel(WINDOW, script=lambda prompt: 700, summary_tokens=200)
    model.attach(fake)
    agent = small_agent(make_agent, fake.base_url)
    lines: list[dict[str, Any]] = []
    for turn in range(1, 6):
        done = await invoke(run_cli, f"{turn}. {QUESTION}", str(agent), "--session", "j", "--json")
        assert done.returncode == 0, done.stderr
        lines += [json.loads(line) for line in done.stdout.splitlines()]
        assert "compacting" not in done.stderr  # with --json the events say it, on stdout
    started = [line for line in lines if line["type"] == "compaction_started"]
    finished = [line for line in lines if line["type"] == "compaction_finished"]
    assert started and len(started) == len(finished)
    assert started[0]["reason"] == "threshold" and started[0]["tokens"] > WINDOW - WINDOW // 4
    assert finished[0]["summary"].startswith("words") and finished[0]["tokensAfter"] < started[0]["tokens"]
    kinds = [line["type"] for line in lines]
    assert kinds.index("compaction_finished") < kinds.index("completed", kinds.index("compaction_started"))


@pytest.mark.timeout(240)  # a few CLI processes: minutes on a loaded machine
async def test_a_digit_dense_paste_does_not_poison_the_session(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    model = SmallWindowModel(WINDOW, script=lambda prompt: 80)
    model.attach(fake)
    agent = small_agent(make_agent, fake.base_url)
    assert (await invoke(run_cli, "hello", str(agent), "--session", "csv")).returncode == 0
    rows = "".join(
        f"2024-01-{d % 28 + 1:02d},{4711 + d * 3}.25,-0.00{d % 97:02d},{d * 7919 % 100000}\n"
        for d in range(150)
    )
    assert (
        len(rows) / 4 < WINDOW * 0.9 < model.prompt_tokens({"messages": [{"content": rows}]})
    )  # chars/4 underrates it
    refused = await invoke(run_cli, f"sum the second column:\n{rows}", str(agent), "--session", "csv")
    assert refused.returncode == 1
    assert "no longer fits local/small's context window" in refused.stderr
    assert not [s for s in model.seen if s[2]]  # the estimate knew: it was refused here, not by the server
    assert all("2024-01-" not in text for text in user_texts(agent))  # and not stored

    # A paste the server's tokenizer splits finer than the estimate assumes (two tokens a digit):
    # the server refuses it; it is not stored, and the next turn works.
    model.digit_cost = 2
    rows = rows[: len(rows) // 2]
    overflow = await invoke(run_cli, f"and these?\n{rows}", str(agent), "--session", "csv")
    assert overflow.returncode == 1
    assert "exceeds the available context size" in overflow.stderr
    assert model.seen[-1][2]  # the server refused it
    assert all("2024-01-" not in text for text in user_texts(agent))
    for turn in range(3):
        after = await invoke(run_cli, f"a short question {turn}", str(agent), "--session", "csv")
        assert after.returncode == 0, after.stderr
        assert "2024-01-" not in json.dumps(fake.last_request.body["messages"])

    # One that fits the server is answered; the usage it reports corrects the estimate, and the
    # conversation goes on through the compactions the paste calls for.
    small = rows[: len(rows) // 2]
    for turn in range(6):
        done = await invoke(run_cli, f"row batch {turn}:\n{small}", str(agent), "--session", "csv")
        assert done.returncode == 0, f"batch {turn}: {done.stderr}"
    assert [e for e in entries(agent) if e["type"] == "compaction"]


async def test_a_rambling_first_answer_leaves_room_for_the_second_turn(
    make_agent: AgentFactory, run_cli: RunCli, fake: FakeOpenAI
) -> None:
    lengths = iter([100_000, 100])
    model = SmallWindowModel(WINDOW, script=lambda prompt: next(lengths))
    model.attach(fake)
    agent = small_agent(make_agent, fake.base_url)
    first = await invoke(run_cli, "tell me everything", str(agent), "--session", "r")
    assert first.returncode == 0, first.stderr
    assert "the answer was cut off" in first.stderr
    assert model.seen[0][1] <= WINDOW // 4  # the answer may take a quarter of the window, not all of it
    second = await invoke(run_cli, "and in one line?", str(agent), "--session", "r")
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == " ".join(["words"] * 100)


@pytest.mark.timeout(240)
async def test_the_request_after_a_compaction_inside_a_run_is_measured_at_the_servers_rate(
    make_agent: AgentFactory, fake: FakeOpenAI
) -> None:
    """A prompt that would pass the threshold compacts the context before it, inside the run that
    then sends it. The server counts the system prompt and the tool schemas at well under the
    estimate (a real llama.cpp server counted a fresh agent's 1 957 estimated tokens as 742); the
    answers the compaction kept no longer measure the context, so the request after it must be
    measured at the rate the server counted before, as a new run would: measured by the bare
    estimate it was refused as leaving no room for an answer (chat against a real 4 096-token
    llama.cpp server: 'about 3,204 tokens of 4,096 are used', where the server counted 2 000)."""
    model = SmallWindowModel(WINDOW, script=lambda prompt: 200, summary_tokens=300, fixed_chars_per_token=9)
    model.attach(fake)
    opened = open_agent_dir(heavy_agent(make_agent, fake.base_url))
    compactions: list[SessionEvent] = []
    events = opened.control.sessions.get("rate").events()

    async def watch() -> None:
        async for event in events:
            if event.type == "compaction_started":
                compactions.append(event)

    watcher = asyncio.create_task(watch())
    try:
        for turn in range(1, 13):
            terminal = (await drain(opened.agent.invoke("rate", f"{turn}. {QUESTION * 5}")))[-1]
            assert isinstance(terminal, Completed), f"turn {turn}: {terminal}"
    finally:
        watcher.cancel()
        await opened.aclose()
    assert compactions  # (the prompts passed the threshold: the runs compacted before them)
    assert not [s for s in model.seen if s[2]]
    summary = WINDOW // 8  # what a summary request asks for
    asked = [wanted for _, wanted, _ in model.seen]
    assert len([a for a in asked if a != summary]) == 12  # one request a turn, no retries
    after = [asked[i + 1] for i in range(len(asked) - 1) if asked[i] == summary != asked[i + 1]]
    assert len(after) == len(compactions)
    assert all(a == WINDOW // 4 for a in after)  # the answer after a compaction takes its full share
