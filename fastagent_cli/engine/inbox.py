"""The engine's :class:`~fastagent_cli.control.Inbox`: input that arrives on its own, run as it comes.

Per session, asyncai's orchestrator rule:

* idle (no run in this engine): the input starts a run at once;
* a run is active and still accepting: the input joins its follow-ups as *coalescing* input, so
  N inputs arriving during a run cause exactly one more turn, after the answer they arrived
  during (``prefix + answer + arrivals``);
* the run has stopped accepting (it is settling): the input waits and opens the next run, together
  with everything else that arrived meanwhile (one run, not one per input).

The items of one post are taken together. A run this inbox starts is consumed here and reported
to its :class:`~fastagent_cli.control.InboxSink`: every event of the invoke stream, each input as
it enters the conversation, and each turn's final answer (``on_reply``). A session whose lease
another process holds is retried every :data:`BUSY_RETRY_S` until it frees or the inbox closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fastagent_cli.contract import SESSION_BUSY_CODE, Failed, Scope, closing, is_terminal
from fastagent_cli.control import InboxSink, InputItem, SessionEvent

if TYPE_CHECKING:
    from fastagent_cli.engine.agent import EngineAgent

__all__ = ["BUSY_RETRY_S", "EngineInbox"]

log = logging.getLogger("fastagent.agent")

BUSY_RETRY_S = 1.0
"""How long to wait before trying again a session another process is running."""


class _Replies:
    """Each assistant message's text; a message that ends the turn (not a tool call) is a reply."""

    def __init__(self, session: str, sink: InboxSink) -> None:
        self.session = session
        self.sink = sink
        self.parts: list[str] = []

    def __call__(self, event: SessionEvent) -> None:
        kind = event.type
        if kind == "message_started":
            self.parts = []
        elif kind == "message_delta" and event.data.get("channel") == "text":
            self.parts.append(str(event.data.get("delta", "")))
        elif kind == "message_finished":
            if event.data.get("stopReason") in ("stop", "length"):
                self.sink.on_reply(self.session, "".join(self.parts))
            self.parts = []
        elif kind in ("user_message", "notice"):
            self.sink.on_input(self.session, kind, event.data)


class EngineInbox:
    def __init__(self, agent: EngineAgent, sink: InboxSink) -> None:
        self._agent = agent
        self._sink = sink
        self._pending: dict[str, list[InputItem]] = {}
        self._drivers: dict[str, asyncio.Task[None]] = {}
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False

    # --- the Inbox protocol ----------------------------------------------------------------------

    def post(self, session: str, item: InputItem) -> None:
        self.post_many(session, [item])

    def post_many(self, session: str, items: Sequence[InputItem]) -> None:
        if self._closed or not items:
            return
        run = self._agent.runs.active(session)
        if run is not None and session not in self._pending:
            results = [run.enqueue_input(item) for item in items]
            if all(r.ok for r in results):
                return
            items = [item for item, r in zip(items, results, strict=True) if not r.ok]
        self._pending.setdefault(session, []).extend(items)
        if session not in self._drivers:
            self._idle.clear()
            self._drivers[session] = asyncio.create_task(self._drive(session), name=f"inbox-{session}")

    def busy(self) -> bool:
        return bool(self._drivers) or bool(self._pending)

    async def drain(self) -> None:
        while self.busy():
            await self._idle.wait()

    async def aclose(self) -> None:
        self._closed = True
        self._pending.clear()
        drivers = list(self._drivers.values())
        for task in drivers:
            task.cancel()
        for task in drivers:
            with contextlib.suppress(BaseException):
                await task

    # --- the driver --------------------------------------------------------------------------------

    async def _drive(self, session: str) -> None:
        try:
            while not self._closed:
                items = self._pending.pop(session, None)
                if not items:
                    return
                busy = await self._run(session, items)
                if busy:  # another process holds the session: keep the items first in line
                    self._pending[session] = items + self._pending.get(session, [])
                    await asyncio.sleep(BUSY_RETRY_S)
        finally:
            self._drivers.pop(session, None)
            if not self.busy():
                self._idle.set()

    async def _run(self, session: str, items: list[InputItem]) -> bool:
        """Run ``items`` as one run; ``True`` when the session was busy (nothing ran)."""
        replies = _Replies(session, self._sink)
        # The generator registers its run before its first event: input posted from here on
        # joins that run.
        events = self._agent.run_inputs(Scope(session), items, observe=replies)
        async with closing(events) as stream:
            async for event in stream:
                if isinstance(event, Failed) and event.code == SESSION_BUSY_CODE:
                    log.debug("[inbox] session %s is busy; trying again in %g s", session, BUSY_RETRY_S)
                    return True
                self._sink.on_event(session, event)
                if is_terminal(event):
                    break
        return False
