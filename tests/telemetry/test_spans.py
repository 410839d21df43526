"""Spans as the engine and hosts open them: the tree (a child of the span current where its block
starts, a task inheriting it), a caller's ``traceparent`` continued, an exception or a
cancellation leaving the block as the status (a status already set kept), and nothing while
telemetry is off."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from fastagent_cli import telemetry
from fastagent_cli.telemetry.spans import STATUS_ERROR, Span, install

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


class _Sink:
    capture_content = False

    def __init__(self) -> None:
        self.spans: list[Span] = []

    def submit(self, span: Span) -> None:
        self.spans.append(span)


@pytest.fixture
def sink() -> Iterator[_Sink]:
    made = _Sink()
    install(made)
    yield made
    install(None)


def test_off_yields_none_and_sends_no_traceparent() -> None:
    header = f"00-{TRACE}-{PARENT}-01"
    with (
        telemetry.root_span("POST /invoke", trigger="http", traceparent=header) as root,
        telemetry.span("invoke_agent") as child,
    ):
        assert root is None and child is None
        assert telemetry.traceparent() is None and telemetry.current_span() is None


async def test_the_tree_continues_the_callers_trace_into_tasks(sink: _Sink) -> None:
    async def tool() -> str | None:
        with telemetry.span("execute_tool read", attributes={"gen_ai.tool.name": "read"}):
            return telemetry.traceparent()

    with telemetry.root_span("POST /invoke", trigger="http", traceparent=f"00-{TRACE}-{PARENT}-01") as root:
        with telemetry.span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}) as turn:
            assert turn is not None and telemetry.current_span() is turn
            sent = await asyncio.create_task(tool())
        assert telemetry.current_span() is root
    assert telemetry.current_span() is None
    tool_span, turn_span, root_span = sink.spans  # submitted as they end
    assert root is root_span and root.parent_id == bytes.fromhex(PARENT) and root.trace_hex == TRACE
    assert root.attributes == {"fastagent.trigger": "http"} and root.kind == telemetry.SERVER
    assert turn_span.parent_id == root.span_id and turn_span.kind == telemetry.INTERNAL
    assert tool_span.parent_id == turn_span.span_id and tool_span.trace_id == root.trace_id
    assert tool_span.attributes == {"gen_ai.tool.name": "read"}
    assert sent == f"00-{TRACE}-{tool_span.span_id.hex()}-01"
    assert all(s.start_ns <= s.end_ns for s in sink.spans)
    assert root.start_ns <= turn_span.start_ns <= tool_span.start_ns <= tool_span.end_ns <= root.end_ns


def test_a_malformed_traceparent_is_a_new_trace(sink: _Sink) -> None:
    header = f"00-{'0' * 32}-{PARENT}-01"
    with (
        telemetry.root_span("POST /invoke", trigger="http", traceparent=header),
        telemetry.span("invoke_agent"),
    ):
        pass
    turn, root = sink.spans
    assert root.parent_id is None and root.trace_hex != "0" * 32 and turn.trace_id == root.trace_id


async def test_an_exception_or_a_cancellation_is_the_status_unless_one_is_set(sink: _Sink) -> None:
    with pytest.raises(ValueError, match="bad"), telemetry.span("failing"):
        raise ValueError("bad input")
    with pytest.raises(RuntimeError), telemetry.span("failed on purpose") as marked:
        assert marked is not None
        marked.fail("model said no", "model_error")
        raise RuntimeError("after the status")

    async def slow() -> None:
        with telemetry.span("cancelled"):
            await asyncio.sleep(30)

    task = asyncio.create_task(slow())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with telemetry.span("fine"):
        pass
    failing, marked_span, cancelled, fine = sink.spans
    assert (failing.status_code, failing.status_message) == (STATUS_ERROR, "ValueError: bad input")
    assert (
        marked_span.status_message == "model said no"
        and marked_span.attributes["error.type"] == "model_error"
    )
    assert (cancelled.status_code, cancelled.status_message) == (STATUS_ERROR, "cancelled")
    assert fine.status_code == 0 and telemetry.current_span() is None
