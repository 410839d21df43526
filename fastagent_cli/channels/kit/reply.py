"""One live reply in a chat, the shape every platform's rendering shares (feature K17).

A platform's reply (Telegram's edited message, Feishu/Lark's streaming card, Slack's classic
rendering) holds the platform client, the target, the :class:`~fastagent_cli.channels.kit.preview.TurnView`
and the :class:`~fastagent_cli.channels.kit.preview.PreviewPump` that repaints it, and says two
things of its own: how the preview is written (:meth:`LiveReply.flush`) and how it settles into its
final text (:meth:`LiveReply.settle`; ``""`` deletes it). :meth:`LiveReply.deliver` is the one
event loop: on ``completed`` the answer (or :data:`NO_REPLY`), on an abort by a stop command the
partial answer (:class:`~fastagent_cli.channels.kit.lifecycle.TurnStopped`), on ``failed`` the
``on_error`` text (:class:`~fastagent_cli.channels.kit.lifecycle.TurnFailed`), and when the stream
ends or raises before either, ``on_error``'s text for :data:`ENDED_EARLY`. Cancelled (the process
is stopping), it writes nothing more.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

from fastagent_cli.channels.kit.invoke import ChannelFailure, OnError
from fastagent_cli.channels.kit.lifecycle import TurnFailed, TurnStopped
from fastagent_cli.channels.kit.preview import PreviewPump, TurnView, apply_event
from fastagent_cli.contract import ABORTED_CODE, AgentEvent, Completed, Failed
from fastagent_cli.errors import ChannelApiError

__all__ = ["ENDED_EARLY", "NO_REPLY", "LiveReply"]

log = logging.getLogger("fastagent.channel")

NO_REPLY = "(no reply)"
ENDED_EARLY = "the turn ended without completing"

ApiT = TypeVar("ApiT")
TargetT = TypeVar("TargetT")


class LiveReply(ABC, Generic[ApiT, TargetT]):
    """The preview of one turn and its final write (see the module doc)."""

    def __init__(self, api: ApiT, target: TargetT, *, throttle_s: float, label: str) -> None:
        self.api = api
        self.target = target
        self.label = label
        self.view = TurnView()
        self.pump = PreviewPump(self.flush, throttle_s=throttle_s, on_error=self._preview_failed)

    def _preview_failed(self, error: BaseException) -> None:
        log.warning("%s live preview failed (the final answer is still sent): %s", self.label, error)

    @abstractmethod
    async def flush(self) -> None:
        """Write the preview as the view now stands (the pump calls it, throttled)."""

    @abstractmethod
    async def settle(self, text: str) -> None:
        """The final write: the preview becomes ``text`` (an empty ``text`` deletes it)."""

    async def complete(self) -> None:
        """The turn completed: settle into the answer (:data:`NO_REPLY` when it is empty)."""
        answer = self.view.answer
        await self.settle(answer if answer.strip() else NO_REPLY)

    def touches(self, event: AgentEvent) -> bool:
        """Does ``event``, once applied to the view, call for a repaint? (Every change does here.)"""
        return True

    async def tell(self, text: str | None) -> None:
        """Settle into ``text`` after a failure; a platform error is logged, never raised."""
        try:
            await self.settle(text or "")
        except ChannelApiError as exc:
            log.warning("%s could not tell the chat the turn failed: %s", self.label, exc)

    async def deliver(self, events: AsyncIterator[AgentEvent], format_error: OnError) -> None:
        """Play ``events`` into the chat; returns when the answer is delivered (see the module doc)."""
        finished = False
        try:
            async for event in events:
                if isinstance(event, Completed):
                    finished = True
                    await self.complete()
                    return
                if isinstance(event, Failed):
                    finished = True
                    if event.code == ABORTED_CODE:  # /stop: keep what was answered so far
                        await self.tell(self.view.answer)
                        raise TurnStopped(event.details)
                    await self.tell(format_error(ChannelFailure(event.details, event.retryable, event.code)))
                    raise TurnFailed(f"{event.details} (retryable={str(event.retryable).lower()})")
                if apply_event(self.view, event) and self.touches(event):
                    self.pump.touch()
            finished = True
            await self.tell(format_error(ChannelFailure(ENDED_EARLY, False)))
            raise TurnFailed(ENDED_EARLY)
        except asyncio.CancelledError:
            finished = True
            raise
        finally:
            if not finished:  # the event stream raised: still tell the user something
                await self.tell(format_error(ChannelFailure(ENDED_EARLY, False)))
            await self.pump.finish()
