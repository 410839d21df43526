"""Tools that hang: per-tool and engine-wide time limits, and sync tools that cannot be stopped
never starve the other sessions' tools or the event loop's default executor."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from fastagent_cli.assembly import create_agent
from fastagent_cli.contract import Completed, ToolEnded, ToolStarted
from fastagent_cli.models.scripted import ScriptedModel
from fastagent_cli.tools.define import tool
from fastagent_cli.tools.threads import ToolThreads, ToolThreadsExhausted
from tests.conformance.suite import drain


def calls(*names: str) -> ScriptedModel:
    """A model that calls the tool named in the prompt once, then says "done"."""
    rules: list[dict[str, Any]] = [
        {"match": name, "steps": [{"toolCalls": [{"name": name, "args": {}}]}, {"text": "done"}]}
        for name in names
    ]
    return ScriptedModel.from_script({"rules": [*rules, {"steps": [{"text": "ok"}]}]})


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of the test so every blocked tool thread returns."""
    event = threading.Event()
    yield event
    event.set()


def ended(events: list[Any]) -> ToolEnded:
    found = [e for e in events if isinstance(e, ToolEnded)]
    assert len(found) == 1 and isinstance(events[-1], Completed), events
    return found[0]


async def test_hung_sync_tools_leave_other_tools_and_the_default_executor_free(
    release: threading.Event,
) -> None:
    hung = min(32, (os.cpu_count() or 1) + 4) + 2  # more than the loop's default executor holds
    loop = asyncio.get_running_loop()
    all_started = asyncio.Event()
    started = 0
    lock = threading.Lock()

    @tool
    def hang() -> str:
        """Block until released."""
        nonlocal started
        with lock:
            started += 1
            if started == hung:
                loop.call_soon_threadsafe(all_started.set)
        release.wait(60)
        return "released"

    @tool
    def quick() -> str:
        """Answer at once."""
        return "quick ok"

    agent = create_agent(model=calls("hang", "quick"), tools=[hang, quick])
    streams = [agent.invoke(f"hung-{i}", "hang") for i in range(hung)]
    for stream in streams:
        assert isinstance(await anext(stream), ToolStarted)
    await asyncio.wait_for(all_started.wait(), 10)
    for stream in streams:  # every caller leaves; the sync functions keep running
        await stream.aclose()

    events = await asyncio.wait_for(drain(agent.invoke("other", "quick")), 10)
    assert ended(events).content == [{"type": "text", "text": "quick ok"}]
    assert await asyncio.wait_for(asyncio.to_thread(lambda: "default executor free"), 10)


async def test_a_tool_timeout_ends_the_call_as_an_error_result_and_the_turn_goes_on() -> None:
    @tool(timeout=0.2)
    async def slow() -> str:
        """Take far too long."""
        await asyncio.sleep(30)
        return "never"

    agent = create_agent(model=calls("slow"), tools=[slow])
    events = await asyncio.wait_for(drain(agent.invoke("s", "slow")), 10)
    result = ended(events)
    assert result.is_error
    assert result.content == [{"type": "text", "text": "Tool slow timed out after 0.2 seconds"}]


async def test_the_engine_default_limits_sync_tools_and_warns_that_the_thread_is_still_held(
    release: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "fastagent.agent")

    @tool
    def stuck() -> str:
        """Wait on something that never comes."""
        release.wait(60)
        return "late"

    agent = create_agent(model=calls("stuck"), tools=[stuck], tool_timeout=0.2)
    events = await asyncio.wait_for(drain(agent.invoke("s", "stuck")), 10)
    assert ended(events).content == [{"type": "text", "text": "Tool stuck timed out after 0.2 seconds"}]
    warning = next(r.getMessage() for r in caplog.records if "cannot be stopped" in r.getMessage())
    assert warning.startswith("[agent] tool stuck was cancelled after 0.")
    assert "held by abandoned calls: stuck" in warning
    release.set()
    for _ in range(100):
        if any("abandoned tool call stuck returned" in r.getMessage() for r in caplog.records):
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the abandoned call's return was not logged")


async def test_a_tool_that_raises_timeout_error_itself_is_an_ordinary_failure() -> None:
    @tool(timeout=5)
    def flaky() -> str:
        """Time out on its own."""
        raise TimeoutError("upstream did not answer")

    agent = create_agent(model=calls("flaky"), tools=[flaky])
    result = ended(await drain(agent.invoke("s", "flaky")))
    assert result.is_error and result.content == [{"type": "text", "text": "upstream did not answer"}]


async def test_when_every_tool_thread_is_held_by_abandoned_calls_a_new_call_fails_at_once(
    release: threading.Event,
) -> None:
    threads = ToolThreads(max_workers=2)
    for _ in range(2):
        waiting = asyncio.create_task(threads.run("blocker", release.wait, {"timeout": 60}))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    assert threads.abandoned == ["blocker", "blocker"]
    with pytest.raises(ToolThreadsExhausted, match=r"all 2 are held by cancelled calls .*\(blocker ×2\)"):
        await threads.run("next", lambda: "x", {})
    release.set()
    for _ in range(100):
        if not threads.abandoned:
            break
        await asyncio.sleep(0.02)
    assert await threads.run("next", lambda: "ran", {}) == "ran"


def test_a_tool_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive number of seconds"):
        tool(timeout=0)(lambda: "x")
