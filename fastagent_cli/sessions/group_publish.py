"""New session records published in groups (group commit), off the event loop.

A record's publication ends in an fsync and a hold of the creation lock, so it runs in a worker
thread. One thread job per record made a burst of new sessions (a thousand clients at once) a
queue of a thousand jobs on the default executor: each job's dozen system calls waited on the
GIL of a loop that was busy with the burst, and turn *k* could not send its first model request
before the *k*-th job, however early its own had been asked for. Here every record asked for in
one loop tick, and every one asked for while a group is being written, leaves in the next group:
one thread job, one hold of the creation lock (:meth:`RecordFiles.publish_many`). A lone
creation waits for one tick and one job.

The jobs run on a thread of the publisher's own, one group at a time, so a group never queues
behind the store's other thread work (record reads on the default executor), and its outcome
comes back to the loop in one call (``call_soon_threadsafe``) instead of through a wrapped
future.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from fastagent_cli.sessions.files import Publication, RecordFiles

__all__ = ["GroupPublisher"]

Outcome = tuple[Path, bool]


class GroupPublisher:
    """``await publisher.publish(item)``: the record's path and whether this call created it (an
    error of the publication raises here). The group's job runs to its end even when every caller
    was cancelled: a cancelled creator still leaves the record it asked for."""

    def __init__(self, files: RecordFiles) -> None:
        self._files = files
        self._waiting: list[tuple[Publication, asyncio.Future[Outcome]]] = []
        self._busy = False
        self._thread: ThreadPoolExecutor | None = None

    def publish(self, item: Publication) -> asyncio.Future[Outcome]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Outcome] = loop.create_future()
        self._waiting.append((item, future))
        if not self._busy:
            self._busy = True
            loop.call_soon(self._start, loop)  # the tick's other creators join this group
        return future

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        group, self._waiting = self._waiting, []
        if not group:
            self._busy = False
            return
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="fastagent-records")
        items = [item for item, _ in group]
        job = self._thread.submit(self._files.publish_many, items)
        job.add_done_callback(lambda done: _back_on(loop, self._settle, group, done))

    def _settle(
        self,
        group: list[tuple[Publication, asyncio.Future[Outcome]]],
        done: Future[list[Outcome | Exception]],
    ) -> None:
        failure = done.exception()
        outcomes = [] if failure is not None else done.result()
        for i, (_, future) in enumerate(group):
            if future.done():
                continue
            if i < len(outcomes):
                outcome = outcomes[i]
                if isinstance(outcome, Exception):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)
            else:
                future.set_exception(failure or RuntimeError("the record group had no outcome"))
        self._start(asyncio.get_running_loop())  # those who asked meanwhile: the next group (or idle)


def _back_on(loop: asyncio.AbstractEventLoop, settle: Callable[..., None], *args: object) -> None:
    """In the worker thread: hand the group's outcome to the loop (gone at shutdown: nobody waits)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(settle, *args)
