"""SSE write coalescing: events that come out of the agent together leave in one write, each one
whole, in order; an event that comes alone leaves at once; a slow client still holds the agent
back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp

from fastagent_cli.contract import AgentEvent, Completed, Text, Thinking, ToolStarted, event_to_wire
from fastagent_cli.serving import sse
from fastagent_cli.serving.invoke_http import create_invoke_handler
from tests.serving.conftest import StartServer


class Recorder:
    """Stands in for the response: records each write (optionally holding it until released)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.hold: asyncio.Event | None = None

    async def write(self, data: bytes) -> None:
        self.writes.append(data)
        if self.hold is not None:
            await self.hold.wait()


def wire(events: list[AgentEvent]) -> bytes:
    return "".join(f"data: {event_to_wire(e)}\n\n" for e in events).encode()


async def bursts(groups: list[list[AgentEvent]], pause: float = 0.02) -> AsyncIterator[AgentEvent]:
    """Each group is emitted at once (no await between its events); groups are ``pause`` apart."""
    for i, group in enumerate(groups):
        if i:
            await asyncio.sleep(pause)
        for event in group:
            yield event


TRICKY = [
    Text("line one\nline two\n\ndata: not an event"),
    Thinking('quotes " and \\ and \u2028 and é and 漢字'),
    Text("a lone surrogate \ud800 stays an escape"),
    ToolStarted("t1", "bash", {"command": "echo\n\nhi"}),
]


async def test_events_emitted_together_leave_in_one_write_whole_and_in_order() -> None:
    groups: list[list[AgentEvent]] = [
        [Text("a"), Text("b"), Text("c")],
        [Text("d")],
        [*TRICKY, Completed({"n": 1})],
    ]
    response = Recorder()
    await sse._Reader(response, bursts(groups), event_to_wire).run()  # type: ignore[arg-type]
    assert response.writes == [wire(group) for group in groups]
    for write in response.writes:  # every write is whole messages: nothing split, nothing merged
        messages = write.decode().split("\n\n")
        assert messages[-1] == ""
        assert all(m.startswith("data: ") and "\n" not in m for m in messages[:-1])


async def test_the_wire_is_byte_identical_to_one_message_per_event(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    events: list[AgentEvent] = [*[Text(f"t{i} ") for i in range(50)], *TRICKY, Completed({"ok": True})]

    class Agent:
        async def invoke(self, scope: object, prompt: object) -> AsyncIterator[AgentEvent]:
            for i, event in enumerate(events):
                if i % 7 == 0:
                    await asyncio.sleep(0.002)  # bursts of a few events
                yield event

    base = await start_server(create_invoke_handler(Agent()))  # type: ignore[arg-type]
    async with http.post(f"{base}/invoke", json={"session": "s", "text": "hi"}) as resp:
        body = await resp.read()
    assert body == wire(events)


async def test_the_first_event_is_written_before_the_agent_emits_another(
    start_server: StartServer, http: aiohttp.ClientSession
) -> None:
    gate = asyncio.Event()

    class Agent:
        async def invoke(self, scope: object, prompt: object) -> AsyncIterator[AgentEvent]:
            yield Text("first")
            await gate.wait()  # nothing else comes until the client has the first event
            yield Text("second")
            yield Completed()

    base = await start_server(create_invoke_handler(Agent()))  # type: ignore[arg-type]
    async with http.post(f"{base}/invoke", json={"session": "s", "text": "hi"}) as resp:
        first = await asyncio.wait_for(resp.content.readuntil(b"\n\n"), 5)
        assert first == wire([Text("first")])
        assert not gate.is_set()
        gate.set()
        rest = await resp.read()
    assert rest == wire([Text("second"), Completed()])


async def test_a_client_that_does_not_read_stops_the_pulling() -> None:
    pulled = 0
    big = "x" * 4096

    async def endless() -> AsyncIterator[AgentEvent]:
        nonlocal pulled
        while True:
            pulled += 1
            yield Text(big)
            await asyncio.sleep(0)

    response = Recorder()
    response.hold = asyncio.Event()  # the first write never finishes: the client is stuck
    task = asyncio.create_task(sse._Reader(response, endless(), event_to_wire).run())  # type: ignore[arg-type]
    await asyncio.sleep(0.2)
    assert len(response.writes) == 1
    assert pulled * len(big) <= 2 * sse.MAX_QUEUED_BYTES + 2 * len(big)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_failed_write_ends_the_relay_and_closes_the_agent_stream() -> None:
    closed = asyncio.Event()

    async def quiet() -> AsyncIterator[AgentEvent]:
        try:
            yield Text("one")
            await asyncio.sleep(30)  # the agent is silent: only the write failure can end it
            yield Text("never")
        finally:
            closed.set()

    class Broken:
        async def write(self, data: bytes) -> None:
            raise ConnectionResetError("client went away")

    task = asyncio.create_task(sse._Reader(Broken(), quiet(), event_to_wire).run())  # type: ignore[arg-type]
    done, _ = await asyncio.wait({task}, timeout=5)
    assert done and isinstance(task.exception(), ConnectionResetError)
    assert closed.is_set()
