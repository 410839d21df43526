"""The A2A face's tasks: one per message sent, each one turn of the agent on the session its
``contextId`` names, run in the background so ``tasks/get`` and ``tasks/cancel`` reach it from any
request.

States (the protocol's): ``submitted`` -> ``working`` -> ``completed`` | ``failed`` | ``canceled``
| ``rejected`` (the session was busy with another turn: the lease is shared with ``/invoke`` and
every face). A task's listeners (a ``message/stream`` request) get each change as it happens: a
:class:`Status` when the state or the phase note changes (the terminal one last), a ``str`` for
each piece of the answer. Tasks live in memory: the newest :data:`MAX_TASKS` finished ones are kept for
``tasks/get``; a task still running is never forgotten.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from fastagent_cli.contract import Agent, AgentEvent, Text
from fastagent_cli.serving.face_kit import describe_event, run_turn

__all__ = ["MAX_TASKS", "TERMINAL", "Status", "TaskBoard", "TaskRecord", "Update"]

MAX_TASKS = 1000
TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})


@dataclass(frozen=True, slots=True)
class Status:
    state: str
    note: str | None
    """The status message: the phase while working, why on failure or rejection."""
    at: float

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


Update = Status | str


@dataclass(slots=True, eq=False)
class TaskRecord:
    id: str
    context_id: str
    message_id: str
    text: str
    """The user's message."""
    status: Status = field(default_factory=lambda: Status("submitted", None, time.time()))
    answer: str = ""
    run: asyncio.Task[None] | None = None
    listeners: list[asyncio.Queue[Update]] = field(default_factory=list)
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def state(self) -> str:
        return self.status.state

    @property
    def terminal(self) -> bool:
        return self.status.terminal

    def publish(self, update: Update) -> None:
        for queue in self.listeners:
            queue.put_nowait(update)

    def set_state(self, state: str, note: str | None = None) -> None:
        self.status = Status(state, note, time.time())
        self.publish(self.status)
        if self.terminal:
            self.finished.set()


class TaskBoard:
    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.tasks: OrderedDict[str, TaskRecord] = OrderedDict()

    def get(self, task_id: str) -> TaskRecord | None:
        return self.tasks.get(task_id)

    def start(self, record: TaskRecord) -> TaskRecord:
        """Register ``record`` and start its turn."""
        self.tasks[record.id] = record
        self._forget_old()
        record.run = asyncio.ensure_future(self._run(record))
        record.run.add_done_callback(lambda _run: _settle(record))
        return record

    def cancel(self, record: TaskRecord) -> None:
        if record.run is not None and not record.run.done():
            record.run.cancel()

    async def aclose(self) -> None:
        running = [r.run for r in self.tasks.values() if r.run is not None and not r.run.done()]
        for run in running:
            run.cancel()
        for run in running:
            with contextlib.suppress(BaseException):
                await run

    async def _run(self, record: TaskRecord) -> None:
        record.set_state("working")

        async def on_event(event: AgentEvent) -> None:
            if isinstance(event, Text):
                if event.delta:
                    record.answer += event.delta
                    record.publish(event.delta)
                return
            note = describe_event(event)
            if note is not None and note != record.status.note:
                record.set_state("working", note)

        try:
            outcome = await run_turn(self.agent, record.context_id, record.text, on_event, trigger="a2a")
        except asyncio.CancelledError:
            record.set_state("canceled", "canceled by the client")
            return
        except Exception as exc:  # the agent broke its contract: the task fails, the server stays
            record.set_state("failed", f"the agent failed: {type(exc).__name__}: {exc}")
            return
        if outcome.busy:
            record.set_state(
                "rejected",
                f"context {record.context_id} is busy with another turn; send again when it ends",
            )
        elif outcome.failed is not None:
            record.set_state("failed", outcome.failed.details)
        else:
            record.set_state("completed")

    def _forget_old(self) -> None:
        finished = [key for key, r in self.tasks.items() if r.terminal]
        for key in finished[: max(0, len(self.tasks) - MAX_TASKS)]:
            del self.tasks[key]


def _settle(record: TaskRecord) -> None:
    """A run cancelled before it started never reached its own handler: it is canceled all the
    same (a ``tasks/cancel`` waiting on it is answered)."""
    if not record.terminal:
        record.set_state("canceled", "canceled by the client")
