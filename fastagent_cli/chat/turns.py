"""One chat turn: ``agent.invoke(scope, prompt)`` consumed into a sink, and what it came to.

Chat is a caller of the contract like any other host. The turn runs as a task; cancelling that
task (Ctrl+C) closes the event stream, which aborts the engine's model request and tool work
(contract MUST 3) and leaves no terminal event: the outcome is then ``interrupted``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from fastagent_cli.chat.tool_lines import ToolLog, ToolRecord
from fastagent_cli.contract import (
    Agent,
    Completed,
    Failed,
    Prompt,
    Retrying,
    Scope,
    Text,
    Thinking,
    ToolEnded,
    ToolStarted,
    closing,
)

__all__ = ["CUT_OFF_MARK", "Driven", "TurnRun", "TurnSink", "was_cut_off"]

CUT_OFF_MARK = (
    "✂ cut off: the answer reached the output token limit (the model's maxTokens, or what its "
    "context window left)"
)


def was_cut_off(event: Completed) -> bool:
    """The turn's last reply stopped at the output limit (``stopReason: length``)."""
    return isinstance(event.data, Mapping) and event.data.get("stopReason") == "length"


Status = Literal["running", "completed", "failed", "interrupted"]


class TurnSink(Protocol):
    """What shows a turn: the rich renderer or the plain printer."""

    def text(self, delta: str) -> None: ...

    def thinking(self, delta: str) -> None: ...

    def tool_started(self, record: ToolRecord) -> None: ...

    def tool_ended(self, record: ToolRecord) -> None: ...

    def retrying(self, event: Retrying) -> None: ...

    def completed(self, event: Completed) -> None: ...

    def failed(self, event: Failed) -> None: ...

    def interrupted(self, stopped: list[ToolRecord]) -> None: ...


class Driven:
    """The :class:`TurnSink` of a run shown from the session's events (the terminal chat): its
    invoke stream only drives it, and keeps its answer, usage and outcome on the :class:`TurnRun`."""

    def text(self, delta: str) -> None: ...

    def thinking(self, delta: str) -> None: ...

    def tool_started(self, record: ToolRecord) -> None: ...

    def tool_ended(self, record: ToolRecord) -> None: ...

    def retrying(self, event: Retrying) -> None: ...

    def completed(self, event: Completed) -> None: ...

    def failed(self, event: Failed) -> None: ...

    def interrupted(self, stopped: list[ToolRecord]) -> None: ...


@dataclass(slots=True)
class TurnRun:
    """A turn being driven. Read ``status``, ``answer`` and ``usage`` after :meth:`run` ends
    (or after its task was cancelled: then call :meth:`mark_interrupted`)."""

    agent: Agent
    scope: Scope
    prompt: Prompt
    sink: TurnSink
    tools: ToolLog
    clock: Callable[[], float] = time.monotonic
    status: Status = "running"
    segments: list[list[str]] = field(default_factory=lambda: [[]])
    """The answer text, one segment per model reply that tools separated."""
    usage: Mapping[str, Any] | None = None
    model: str | None = None
    failure: Failed | None = None

    @property
    def answer(self) -> str:
        """The final reply: the text after the last tool round (what ``/copy`` copies)."""
        return next(("".join(s) for s in reversed(self.segments) if s), "")

    async def run(self) -> None:
        sink = self.sink
        async with closing(self.agent.invoke(self.scope, self.prompt)) as events:
            async for event in events:
                if isinstance(event, Text):
                    self.segments[-1].append(event.delta)
                    sink.text(event.delta)
                elif isinstance(event, Thinking):
                    sink.thinking(event.delta)
                elif isinstance(event, ToolStarted):
                    if self.segments[-1]:
                        self.segments.append([])
                    sink.tool_started(self.tools.start(event, self.clock()))
                elif isinstance(event, ToolEnded):
                    sink.tool_ended(self.tools.end(event, self.clock()))
                elif isinstance(event, Retrying):
                    sink.retrying(event)
                elif isinstance(event, Completed):
                    self.status = "completed"
                    data = event.data if isinstance(event.data, Mapping) else {}
                    usage = data.get("usage")
                    self.usage = usage if isinstance(usage, Mapping) else None
                    model = data.get("model")
                    self.model = model if isinstance(model, str) else None
                    sink.completed(event)
                elif isinstance(event, Failed):
                    self.status = "failed"
                    self.failure = event
                    sink.failed(event)
                # unknown events are ignored (contract MUST 4)
        if self.status == "running":  # a stream without a terminal: treat as a failure, visibly
            self.status = "failed"
            self.failure = Failed("the agent's event stream ended without a terminal event", False)
            sink.failed(self.failure)

    def mark_interrupted(self) -> None:
        self.status = "interrupted"
        self.sink.interrupted(self.tools.interrupt_running(self.clock()))
