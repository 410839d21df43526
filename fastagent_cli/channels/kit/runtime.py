"""The start and stop of a chat channel's runtime, shared by the Telegram, Slack and Feishu/Lark
channels.

Start: :func:`open_stores` opens the channel's state stores (an unreadable one is a
:class:`~fastagent_cli.errors.ServeError`), then :func:`recover_turns` hands back the turns a prior
run left unfinished. :func:`session_queue` is the per-session FIFO every channel runs its turns on.
Stop: :func:`close_runtime` drains the queue and the runner, cancels the background tasks
(:class:`BackgroundTasks`) and closes the stores and the platform client, in that order.
:class:`ChannelRuntime` is the base every platform's runtime is built on, doing the above.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine, Iterable
from typing import Any, Protocol, TypeVar

from fastagent_cli.channels.kit.context_buffer import ContextBuffer
from fastagent_cli.channels.kit.home import state_root_of
from fastagent_cli.channels.kit.invoke import OnError, default_error_message
from fastagent_cli.channels.kit.runner import RunnerParts
from fastagent_cli.channels.kit.turn_queue import TurnQueue
from fastagent_cli.channels.kit.turn_store import TurnRecord, TurnStore
from fastagent_cli.channels.kit.work import cancel_all
from fastagent_cli.errors import ServeError
from fastagent_cli.state.channel_state import channel_home

__all__ = [
    "BackgroundTasks",
    "ChannelRuntime",
    "close_runtime",
    "last_seq",
    "open_stores",
    "recover_turns",
    "session_queue",
]

log = logging.getLogger("fastagent.channel")

T = TypeVar("T")


class _Opens(Protocol):
    async def open(self) -> Any: ...


class _Closes(Protocol):
    async def aclose(self) -> Any: ...


class _Runner(Protocol):
    def run(self, record: TurnRecord) -> Awaitable[None]: ...

    def queued(self, record: TurnRecord) -> None: ...

    async def aclose(self) -> Any: ...


class BackgroundTasks:
    """The fire-and-forget tasks of one channel runtime; :meth:`cancel` ends them all on close."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def cancel(self) -> None:
        await cancel_all(self._tasks)


async def open_stores(kind: str, stores: Iterable[_Opens]) -> None:
    try:
        for store in stores:
            await store.open()
    except OSError as exc:
        raise ServeError(
            f"{kind} channel state is unreadable: {exc.strerror or exc} ({exc.filename})"
        ) from None


def recover_turns(turns: TurnStore, label: str) -> list[TurnRecord]:
    pending = turns.recover()
    if pending:
        log.info("%s recovering %d unfinished turn(s) from a prior run", label, len(pending))
    return pending


def last_seq(records: Iterable[TurnRecord]) -> int:
    """The highest acceptance number among ``records`` (0 for none)."""
    return max((int(r.get("seq", 0)) for r in records), default=0)


def session_queue(runner: _Runner, label: str) -> TurnQueue[TurnRecord]:
    """Turns run one at a time per session; one queued behind another gets the runner's notice."""
    return TurnQueue(
        runner.run, label=label, session_of=lambda r: str(r["session"]), on_queued_behind=runner.queued
    )


async def close_runtime(
    queue: TurnQueue[TurnRecord], runner: _Closes, tasks: BackgroundTasks, closables: Iterable[_Closes]
) -> None:
    await queue.aclose()
    await runner.aclose()
    await tasks.cancel()
    for closable in closables:
        await closable.aclose()


class ChannelRuntime:
    """The runtime a platform's is built on: the runner with its per-session queue, the background
    tasks and the acceptance counter (:meth:`run_on`), the state stores opened (:meth:`open_state`),
    the unfinished turns recovered (:meth:`recover`), and all of it closed (:meth:`aclose`)."""

    kind: str
    label: str
    store: Any
    api: Any
    turns: TurnStore
    buffers: ContextBuffer

    def runner_parts(self, ctx: Any, on_error: OnError | None) -> RunnerParts[Any]:
        """The runner's parts: the agent, this runtime's client, turns and buffers, the channel's
        attachment folder, and ``on_error`` (the kit's default wording when unset)."""
        files = channel_home(state_root_of(ctx), self.kind) / "files"
        return RunnerParts(
            ctx.agent,
            self.api,
            self.turns,
            self.buffers,
            files,
            on_error or default_error_message,
            getattr(ctx, "control", None),
        )

    def run_on(self, runner: _Runner) -> None:
        self.runner = runner
        self.queue = session_queue(runner, self.label)
        self.tasks = BackgroundTasks()
        self.seq = 0

    @property
    def stores(self) -> tuple[Any, ...]:
        """The documents of the channel's state (opened at start, closed at stop)."""
        return (self.turns,)

    async def open_state(self, *first: _Opens) -> None:
        await open_stores(self.kind, (*first, *self.stores))

    def recover(self) -> list[TurnRecord]:
        """The turns a prior run left unfinished, in order; the acceptance counter goes on after them."""
        pending = recover_turns(self.turns, self.label)
        self.seq = last_seq(pending)
        return pending

    def closables(self) -> tuple[Any, ...]:
        return (*self.stores, self.store, self.api)

    async def aclose(self) -> None:
        await close_runtime(self.queue, self.runner, self.tasks, self.closables())
