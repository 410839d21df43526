"""The base of every chat platform's turn runner (Telegram, Slack, Feishu/Lark).

A platform runner says how it tells an asker that a turn is queued (:meth:`ChannelRunner.notice`),
runs a turn on :func:`~fastagent_cli.channels.kit.lifecycle.run_durable_turn` and renders the
answer its own way. What is the same everywhere lives here: the runner's parts
(:class:`RunnerParts`: the agent, the platform client, the turn store, the context buffers, the
attachment folder, the ``on_error`` wording), the queued notices, and
:meth:`ChannelRunner.answer`, the Agent's events for one turn: the discussion buffered since the
last answer folded in before the prompt, and on ``completed``
the intent removed first (a crash after it does not replay the turn), then the fold committed (a
crash before it only folds the discussion once more). A tool call that asks for approval parks the
turn (:meth:`~fastagent_cli.channels.kit.turn_store.TurnStore.park`) before the platform posts the
request (:attr:`ChannelRunner.approvals`; one whose ask is kept already, re-announced by a run
resumed after a restart, is not posted twice); a parked turn recovered after a restart follows the
run that answers it instead of asking again (:mod:`~fastagent_cli.channels.kit.resume`).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from fastagent_cli.channels.kit.approvals import ApprovalAsks
from fastagent_cli.channels.kit.context_buffer import ContextBuffer, Fold
from fastagent_cli.channels.kit.invoke import OnError, stream_turn
from fastagent_cli.channels.kit.lifecycle import QueuedNotices
from fastagent_cli.channels.kit.resume import ResumedTurn
from fastagent_cli.channels.kit.turn_store import TurnRecord, TurnStore
from fastagent_cli.contract import AgentEvent, ApprovalRequested, Completed, ImageRef, Prompt, Scope
from fastagent_cli.control import SessionControl

__all__ = ["ApprovalPoster", "ChannelRunner", "FormatError", "RunnerParts", "folded"]

log = logging.getLogger("fastagent.channel")

ApiT = TypeVar("ApiT")
NoticeT = TypeVar("NoticeT")

FormatError = OnError


def folded(text: str, fold: Fold) -> str:
    """``text`` after the group discussion buffered since the last answer, when there is some."""
    return f"[recent group discussion:\n{fold.text}\n]\n\n{text}" if fold.text else text


@dataclass(frozen=True, slots=True)
class RunnerParts(Generic[ApiT]):
    """What a platform runner runs on, built by its runtime
    (:meth:`~fastagent_cli.channels.kit.runtime.ChannelRuntime.runner_parts`)."""

    agent: Any
    api: ApiT
    turns: TurnStore
    buffers: ContextBuffer
    files: Path
    """Where the turns' attachments are saved (``<channel home>/files``)."""
    format_error: FormatError
    """``on_error``: the text a user reads when a turn fails (``""``: say nothing)."""
    control: SessionControl | None = None
    """The session hub (``ctx.control``): what a recovered turn follows while its approval waits."""


class ApprovalPoster(Protocol):
    """A platform's approvals: post the request of a turn's tool call where the turn was asked."""

    asks: ApprovalAsks
    """The requests posted and still open (one asked before a restart is not posted again)."""

    async def ask(self, record: TurnRecord, event: ApprovalRequested) -> None: ...


class ChannelRunner(ABC, Generic[ApiT, NoticeT]):
    """What every platform runner holds and does the same way (see the module doc)."""

    def __init__(self, parts: RunnerParts[ApiT], *, label: str) -> None:
        self.agent = parts.agent
        self.api = parts.api
        self.turns = parts.turns
        self.buffers = parts.buffers
        self.files = parts.files
        self.format_error = parts.format_error
        self.control = parts.control
        self.approvals: ApprovalPoster | None = None
        self.label = label
        self.notices: QueuedNotices[NoticeT] = QueuedNotices()

    def queued(self, record: TurnRecord) -> None:
        """The turn waits behind another of its session: tell the asker now."""
        self.notices.post(record["id"], self.notice(record))

    @abstractmethod
    async def notice(self, record: TurnRecord) -> NoticeT:
        """Post the platform's "queued" notice for ``record`` (a failure is logged, never raised)."""

    async def aclose(self) -> None:
        await self.notices.aclose()

    async def answer(
        self,
        record: TurnRecord,
        fold: Fold,
        prompt_text: str,
        images: Sequence[ImageRef] = (),
        scope: Scope | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """The Agent's events for ``record`` asked as ``prompt_text`` (the fold already in it);
        for a parked turn recovered while its request still waits, the answering run's."""
        resumed = None
        if record.get("awaiting") and self.control is not None:
            resumed = await ResumedTurn.open(self.control, record["session"])
        if resumed is not None:
            log.info(
                "%s turn %s waits for its approval (session=%s): the answer resumes it",
                self.label,
                record["id"],
                record["session"],
            )
            events = resumed.events()
        else:
            prompt = Prompt(prompt_text, tuple(images))
            events = stream_turn(self.agent, scope or Scope(record["session"]), prompt, label=self.label)
        async for event in events:
            if isinstance(event, ApprovalRequested):
                await self.turns.park(record["id"])
                if self.approvals is not None and self.approvals.asks.get(event.id) is None:
                    await self.approvals.ask(record, event)
            elif isinstance(event, Completed):
                await self.turns.remove(record["id"])
                await self.buffers.commit_consumed(record["place"], fold.consumed)
            yield event
