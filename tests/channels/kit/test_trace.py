"""The delivery trace: a webhook request's valid ``traceparent`` (telemetry on) is stamped into the
turn records its handler adds, kept across a restart, and ignored when telemetry is off, the
header is malformed, or the add happens outside a request."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastagent_cli.channels.kit.trace import delivery_trace, incoming_traceparent, receiving
from fastagent_cli.channels.kit.turn_store import TurnStore
from fastagent_cli.state.channel_state import FileChannelState
from fastagent_cli.telemetry import Span
from fastagent_cli.telemetry.spans import install

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
HEADER = f"00-{TRACE}-{PARENT}-01"


class _Sink:
    capture_content = False

    def __init__(self) -> None:
        self.spans: list[Span] = []

    def submit(self, span: Span) -> None:
        self.spans.append(span)


@pytest.fixture
def tracing() -> Iterator[_Sink]:
    sink = _Sink()
    install(sink)
    yield sink
    install(None)


async def opened(home: Path) -> TurnStore:
    store = TurnStore(FileChannelState(home), label="[test]")
    await store.open()
    return store


@pytest.mark.usefixtures("tracing")
def test_only_a_valid_version_00_header_counts() -> None:
    assert incoming_traceparent({"traceparent": f" {HEADER.upper()} "}) == HEADER
    for bad in (
        "",
        f"01-{TRACE}-{PARENT}-01",
        f"00-{'0' * 32}-{PARENT}-01",
        f"00-{TRACE}-{'0' * 16}-01",
        f"00-{TRACE[:-1]}-{PARENT}-01",
    ):
        assert incoming_traceparent({"traceparent": bad}) is None, bad
    assert incoming_traceparent({}) is None


def test_telemetry_off_reads_nothing() -> None:
    assert incoming_traceparent({"traceparent": HEADER}) is None


@pytest.mark.usefixtures("tracing")
async def test_a_turn_added_in_a_request_keeps_its_trace_across_a_restart(tmp_path: Path) -> None:
    store = await opened(tmp_path)
    with receiving({"traceparent": HEADER}):
        assert delivery_trace() == HEADER
        # the intake runs shielded, in a task of its own: it sees the request's trace too
        assert await asyncio.shield(store.add({"id": "1", "session": "s"}))
        assert await store.add({"id": "2", "session": "s", "traceparent": "kept as given"})
    assert delivery_trace() is None
    assert await store.add({"id": "3", "session": "s"})  # outside a request: no trace
    with receiving({"traceparent": "garbage"}):
        assert await store.add({"id": "4", "session": "s"})
    assert [store.traceparent(i) for i in ("1", "2", "3", "4", "gone")] == [
        HEADER,
        "kept as given",
        None,
        None,
        None,
    ]
    await store.aclose()
    again = await opened(tmp_path)
    assert {r["id"]: r.get("traceparent") for r in again.recover()} == {
        "1": HEADER,
        "2": "kept as given",
        "3": None,
        "4": None,
    }
    await again.aclose()


async def test_a_mistyped_trace_in_a_stored_record_is_refused(tmp_path: Path) -> None:
    store = await opened(tmp_path)
    with pytest.raises(ValueError, match="missing or mistyped"):
        store.apply({}, {"op": "add", "turn": {"id": "1", "session": "s", "attempts": 0, "traceparent": 7}})
    await store.aclose()


async def test_the_durable_turn_continues_the_stored_trace(tmp_path: Path, tracing: _Sink) -> None:
    from fastagent_cli import telemetry
    from fastagent_cli.channels.kit.lifecycle import run_durable_turn

    store = await opened(tmp_path)
    with receiving({"traceparent": HEADER}):
        await store.add({"id": "1", "session": "s"})
    seen: list[str | None] = []

    async def execute() -> None:
        seen.append(telemetry.traceparent())

    async def nothing() -> None:
        return None

    record = store.recover()[0]
    record.pop("traceparent")  # the runner's copy may lack it: the store's record has it
    await run_durable_turn(
        store, record, label="[test]", where="", execute=execute, on_exceeded=nothing, on_defer=nothing
    )
    [root] = tracing.spans
    assert (root.trace_id.hex(), root.parent_id and root.parent_id.hex()) == (TRACE, PARENT)
    assert root.name == "test turn" and seen == [root.traceparent()]
    await store.aclose()
