"""The turn queue, the busy-wait around ``agent.invoke``, the work counter and the prompt wording."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from fastagent_cli.channels.kit.invoke import (
    BusyRetry,
    ChannelFailure,
    ManifestFile,
    attached_files_manifest,
    attributed_file_name,
    default_error_message,
    missing_attachments_note,
    referent,
    stream_turn,
)
from fastagent_cli.channels.kit.turn_queue import TurnQueue
from fastagent_cli.channels.kit.work import active_work, begin_work
from fastagent_cli.contract import SESSION_BUSY_CODE, AgentEvent, Completed, Failed, Prompt, Scope, Text


async def test_turns_of_a_session_run_in_order_and_sessions_run_together() -> None:
    log: list[str] = []
    gates = {name: asyncio.Event() for name in ("a1", "a2", "b1")}
    queued: list[str] = []

    async def run(item: tuple[str, str]) -> None:
        log.append(f"start {item[1]}")
        await gates[item[1]].wait()
        log.append(f"end {item[1]}")

    queue: TurnQueue[tuple[str, str]] = TurnQueue(
        run,
        label="[t]",
        session_of=lambda item: item[0],
        on_queued_behind=lambda item: queued.append(item[1]),
    )
    before = active_work()
    queue.accept(("a", "a1"))
    queue.accept(("a", "a2"))
    queue.accept(("b", "b1"))
    await asyncio.sleep(0.05)
    assert log == ["start a1", "start b1"] and queued == ["a2"]
    assert active_work() == before + 3  # a queued turn counts as work too
    gates["a2"].set()
    gates["b1"].set()
    await asyncio.sleep(0.05)
    assert log == ["start a1", "start b1", "end b1"]  # a2 waits for a1 even though it could finish
    gates["a1"].set()
    await queue.idle()
    assert log == ["start a1", "start b1", "end b1", "end a1", "start a2", "end a2"]
    assert active_work() == before and not queue.busy("a")


async def test_a_runner_that_raises_does_not_stop_the_session() -> None:
    ran: list[int] = []

    async def run(item: int) -> None:
        ran.append(item)
        if item == 1:
            raise RuntimeError("boom")

    queue: TurnQueue[int] = TurnQueue(run, label="[t]", session_of=lambda item: "s")
    queue.accept(1)
    queue.accept(2)
    await queue.idle()
    assert ran == [1, 2]


async def test_closing_cancels_running_and_queued_turns() -> None:
    started = asyncio.Event()
    cancelled: list[int] = []

    async def run(item: int) -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(item)
            raise

    queue: TurnQueue[int] = TurnQueue(run, label="[t]", session_of=lambda item: "s")
    before = active_work()
    queue.accept(1)
    queue.accept(2)
    await started.wait()
    await queue.aclose()
    assert cancelled == [1] and active_work() == before


async def test_a_burst_of_new_sessions_runs_at_most_max_running_turns_in_arrival_order() -> None:
    # 500 new conversations at once used to run all together: each shared the loop, the HTTP pool
    # and the disk with all the others, so the first answer came only when nearly all were done
    gates: dict[int, asyncio.Event] = {n: asyncio.Event() for n in range(10)}
    started: list[int] = []
    most = 0

    async def run(item: int) -> None:
        nonlocal most
        started.append(item)
        most = max(most, queue.running)
        await gates[item].wait()

    queue: TurnQueue[int] = TurnQueue(run, label="[t]", session_of=lambda item: f"s{item}", max_running=3)
    before = active_work()
    for n in range(10):
        queue.accept(n)
    await asyncio.sleep(0.05)
    assert started == [0, 1, 2] and queue.running == 3
    assert active_work() == before + 10 and all(queue.busy(f"s{n}") for n in range(10))
    gates[1].set()
    await asyncio.sleep(0.05)
    assert started == [0, 1, 2, 3]  # the next in arrival order takes the freed slot
    for gate in gates.values():
        gate.set()
    await queue.idle()
    assert started == list(range(10)) and most == 3 and queue.running == 0 and active_work() == before


async def test_a_turn_waiting_for_its_session_holds_no_running_slot() -> None:
    gates = {name: asyncio.Event() for name in ("a1", "a2", "b1")}
    started: list[str] = []

    async def run(item: tuple[str, str]) -> None:
        started.append(item[1])
        await gates[item[1]].wait()

    queue: TurnQueue[tuple[str, str]] = TurnQueue(run, label="[t]", session_of=lambda i: i[0], max_running=2)
    queue.accept(("a", "a1"))
    queue.accept(("a", "a2"))  # waits for a1 without a slot
    queue.accept(("b", "b1"))
    await asyncio.sleep(0.05)
    assert started == ["a1", "b1"]
    for gate in gates.values():
        gate.set()
    await queue.idle()
    assert started == ["a1", "b1", "a2"]


def test_the_work_counter_is_idempotent_per_unit() -> None:
    before = active_work()
    done = begin_work()
    assert active_work() == before + 1
    done()
    done()
    assert active_work() == before


class BusyThenFree:
    def __init__(self, busy_times: int) -> None:
        self.busy_times = busy_times
        self.calls = 0

    async def invoke(self, scope: Scope, prompt: Prompt) -> AsyncIterator[AgentEvent]:
        self.calls += 1
        if self.calls <= self.busy_times:
            yield Failed("session busy", True, SESSION_BUSY_CODE)
            return
        yield Text("answer")
        yield Completed()


async def collect_events(agent: Any, retry: BusyRetry, committed: list[str]) -> list[AgentEvent]:
    async def on_completed() -> None:
        committed.append("commit")

    return [
        e
        async for e in stream_turn(
            agent, Scope("s"), Prompt("x"), label="[t]", on_completed=on_completed, busy_retry=retry
        )
    ]


async def test_a_first_session_busy_is_waited_out() -> None:
    agent = BusyThenFree(busy_times=2)
    committed: list[str] = []
    events = await collect_events(agent, BusyRetry(delay_s=0.01, max_wait_s=5), committed)
    assert agent.calls == 3
    assert [e.type for e in events] == ["text", "completed"] and committed == ["commit"]


async def test_a_busy_session_that_stays_busy_surfaces_the_failure() -> None:
    agent = BusyThenFree(busy_times=1000)
    committed: list[str] = []
    events = await collect_events(agent, BusyRetry(delay_s=0.02, max_wait_s=0.1), committed)
    assert isinstance(events[-1], Failed) and events[-1].code == SESSION_BUSY_CODE
    assert 2 <= agent.calls <= 6 and committed == []


def test_failure_texts_and_prompt_suffixes() -> None:
    assert (
        default_error_message(ChannelFailure("x", True))
        == "⚠️ Temporary problem — please try again in a moment."
    )
    assert default_error_message(ChannelFailure("x", False)) == (
        "⚠️ Sorry, something went wrong. Try rephrasing, or check I have access to what you need."
    )
    files = [
        ManifestFile("a.pdf", 10, "/s/a.pdf"),
        ManifestFile(attributed_file_name("b.txt", "@bob", 4), 2, "/s/b"),
    ]
    assert attached_files_manifest(files) == (
        "\n\n[attached files:\n- a.pdf (10 bytes) → /s/a.pdf\n"
        "- b.txt (from @bob, msg 4, earlier discussion) (2 bytes) → /s/b\n]"
    )
    assert attached_files_manifest([]) == "" and missing_attachments_note(0) == ""
    assert missing_attachments_note(2).startswith(
        "\n[note: 2 attachment(s) from the earlier discussion are not loaded"
    )
    assert referent("x" * 5000) == "x" * 4095 + "…" and len(referent("y" * 4096)) == 4096
    assert referent(None) == "[the quoted message could not be loaded]"
