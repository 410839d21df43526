"""A reusable Agent Handler conformance suite (SPEC v0.1 section 6).

Any :class:`~fastagent_cli.contract.Agent` can be put through it by describing it as a
:class:`Subject`:

* ``completing()``: an agent, scope and prompt whose turn completes;
* ``failing()``: one whose turn fails;
* ``hanging(on_cleanup)``: one whose turn never ends on its own, with in-flight work that calls
  ``on_cleanup(kind)`` when it is aborted and released (``kind`` names what: "model", "tool"...);
* ``pair()`` (optional, MUST 6): two instances sharing only their durable store, and a check that
  the second saw the first one's turn.

The checks: MUST 1 (exactly one terminal, last), MUST 1+2 (a failing drain does not raise and
ends with one ``failed`` carrying string ``details`` and boolean ``retryable``), MUST 3 in the
three Python forms (``break`` and drop the generator; ``aclose()``; cancel the consuming task):
cleanup within 3 s and no terminal seen, every event surviving a JSON round trip, and MUST 6 with
session ``-1001234567890``.
"""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fastagent_cli.contract import (
    Agent,
    AgentEvent,
    Completed,
    Failed,
    Prompt,
    Scope,
    event_from_json,
    event_to_json,
    is_terminal,
)

CLEANUP_DEADLINE_S = 3.0
PORTABLE_SESSION = "-1001234567890"


@dataclass
class Case:
    agent: Agent
    scope: Scope
    prompt: Prompt


@dataclass
class Pair:
    a: Agent
    b: Agent
    saw_history: Callable[[list[AgentEvent]], bool]
    first_prompt: Prompt
    second_prompt: Prompt


class Subject(Protocol):
    def completing(self) -> Awaitable[Case]: ...

    def failing(self) -> Awaitable[Case]: ...

    def hanging(self, on_cleanup: Callable[[str], None]) -> Awaitable[Case]: ...

    def pair(self) -> Awaitable[Pair | None]: ...


async def drain(events: AsyncIterator[AgentEvent]) -> list[AgentEvent]:
    return [event async for event in events]


def round_trip(event: AgentEvent) -> None:
    wire = json.loads(json.dumps(event_to_json(event)))
    assert event_from_json(wire) == event, f"{event!r} does not survive a JSON round trip"


async def must1_success(subject: Subject) -> list[AgentEvent]:
    case = await subject.completing()
    events = await drain(case.agent.invoke(case.scope, case.prompt))
    terminals = [e for e in events if is_terminal(e)]
    assert len(terminals) == 1, f"expected exactly one terminal, got {terminals}"
    assert events[-1] is terminals[0], "the terminal must be the last event"
    assert isinstance(terminals[0], Completed), f"expected completed, got {terminals[0]}"
    for event in events:
        round_trip(event)
    return events


async def must2_failure(subject: Subject) -> Failed:
    case = await subject.failing()
    events = await drain(case.agent.invoke(case.scope, case.prompt))  # must not raise
    terminals = [e for e in events if is_terminal(e)]
    assert len(terminals) == 1 and events[-1] is terminals[0]
    failed = terminals[0]
    assert isinstance(failed, Failed), f"expected failed, got {failed}"
    assert isinstance(failed.details, str) and failed.details
    assert isinstance(failed.retryable, bool)
    for event in events:
        round_trip(event)
    return failed


class _Cleanup:
    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.event = asyncio.Event()

    def __call__(self, kind: str) -> None:
        self.kinds.append(kind)
        self.event.set()


async def _first_event(events: AsyncIterator[AgentEvent]) -> AgentEvent:
    return await asyncio.wait_for(events.__anext__(), timeout=10)


async def must3(subject: Subject, form: str) -> list[str]:
    """Stop consuming after the first event in ``form`` ('break', 'aclose' or 'cancel');
    return the kinds of in-flight work that were cleaned up."""
    cleanup = _Cleanup()
    case = await subject.hanging(cleanup)
    seen: list[AgentEvent] = []
    if form == "break":

        async def consume_and_drop() -> None:
            events = case.agent.invoke(case.scope, case.prompt)
            async for event in events:
                seen.append(event)
                break
            del events  # dropped: the event loop's asyncgen finalizer closes it

        await consume_and_drop()
        gc.collect()
    elif form == "aclose":
        events = case.agent.invoke(case.scope, case.prompt)
        seen.append(await _first_event(events))
        await events.aclose()  # type: ignore[attr-defined]
    elif form == "cancel":
        started = asyncio.Event()

        async def consume() -> None:
            async for event in case.agent.invoke(case.scope, case.prompt):
                seen.append(event)
                started.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), timeout=10)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
    else:
        raise ValueError(form)
    await asyncio.wait_for(cleanup.event.wait(), timeout=CLEANUP_DEADLINE_S)
    await asyncio.sleep(0.05)
    assert not any(is_terminal(e) for e in seen), f"no terminal may be emitted after a cancel: {seen}"
    for event in seen:
        round_trip(event)
    return cleanup.kinds


async def must6_portable(subject: Subject) -> None:
    pair = await subject.pair()
    assert pair is not None, "subject offers no pair"
    scope = Scope(PORTABLE_SESSION)
    first = await drain(pair.a.invoke(scope, pair.first_prompt))
    assert isinstance(first[-1], Completed), first
    second = await drain(pair.b.invoke(scope, pair.second_prompt))
    assert isinstance(second[-1], Completed), second
    assert pair.saw_history(second), "the second instance did not see the first one's turn"


async def run_all(subject: Subject, *, portable: bool = True) -> dict[str, Any]:
    """Every check in order (for embedding in other suites)."""
    report: dict[str, Any] = {
        "must1": await must1_success(subject),
        "must2": await must2_failure(subject),
    }
    for form in ("break", "aclose", "cancel"):
        report[f"must3_{form}"] = await must3(subject, form)
    if portable:
        await must6_portable(subject)
    return report
