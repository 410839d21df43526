"""One GitHub turn: the intent's prompt through the Agent, logged, its approval requests asked.

A turn's answer goes nowhere by itself (the agent's own tools comment or review). A tool call that
waits for approval is asked as a comment on the delivery's issue or pull request
(:class:`~.approvals.GithubApprovals`); a turn with no such place, or a channel without a token,
waits for an answer from the control plane or the web chat, and says so once in the log. When an
asked call ends, its request comment is closed unless a comment answered it (:meth:`~.approvals.
GithubApprovals.settled`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastagent_cli import telemetry
from fastagent_cli.channels.github.approvals import GithubApprovals
from fastagent_cli.channels.github.parse import Intent, Thread
from fastagent_cli.contract import (
    AgentEvent,
    AgentFailure,
    ApprovalRequested,
    Prompt,
    Scope,
    ToolEnded,
    closing,
    collect,
)
from fastagent_cli.errors import one_line

__all__ = ["GithubRunner", "Turn"]

log = logging.getLogger("fastagent.channel")


@dataclass(frozen=True, slots=True)
class Turn:
    id: str
    intent: Intent
    event: str
    traceparent: str | None
    """The delivery's W3C trace context (telemetry on): the turn's root span continues it."""
    thread: Thread | None = None
    """The issue or pull request of the delivery: where its approval requests are asked."""
    sender: str | None = None
    """The delivery's ``sender.login``."""


class GithubRunner:
    def __init__(self, agent: Any, approvals: GithubApprovals | None) -> None:
        self.agent = agent
        self.approvals = approvals

    def queued(self, turn: Turn) -> None:
        log.info(
            "[github] turn queued: turn=%s session=%s (behind the session's running turn)",
            turn.id,
            turn.intent.session,
        )

    async def run(self, turn: Turn) -> None:
        intent = turn.intent
        log.info("[github] turn start: turn=%s session=%s event=%s", turn.id, intent.session, turn.event)
        started = time.monotonic()
        try:
            with telemetry.root_span(
                "github turn",
                trigger="channel",
                traceparent=turn.traceparent,
                kind=telemetry.CONSUMER,
                attributes={"fastagent.channel": "github", "gen_ai.conversation.id": intent.session},
            ):
                await collect(self._events(turn))
        except asyncio.CancelledError:
            log.warning(
                "[github] turn interrupted: turn=%s session=%s (not replayed)", turn.id, intent.session
            )
            raise
        except AgentFailure as exc:
            self._failed(turn, started, one_line(exc.details, 500))
        except Exception as exc:
            self._failed(turn, started, describe(exc))
        else:
            log.info("[github] turn done: turn=%s session=%s (%dms)", turn.id, intent.session, _ms(started))

    async def _events(self, turn: Turn) -> AsyncIterator[AgentEvent]:
        told = False
        asked: dict[str, str] = {}  # tool call id -> the approval asked for it on GitHub
        async with closing(self.agent.invoke(Scope(turn.intent.session), Prompt(turn.intent.text))) as events:
            async for event in events:
                if isinstance(event, ToolEnded) and event.id in asked and self.approvals is not None:
                    await self.approvals.settled(asked.pop(event.id))
                elif isinstance(event, ApprovalRequested):
                    if self.approvals is not None and turn.thread is not None:
                        asked[event.tool_call_id] = event.id
                        if self.approvals.asks.get(event.id) is None:
                            await self.approvals.ask(turn.intent.session, turn.thread, turn.sender, event)
                    elif not told:
                        told = True
                        why = (
                            "no GITHUB_TOKEN to comment with"
                            if self.approvals is None
                            else "its delivery is about no issue or pull request to comment on"
                        )
                        log.info(
                            "[github] turn %s: approval %s (%s) waits for an answer from the control "
                            "plane or the web chat: %s",
                            turn.id,
                            event.id,
                            event.tool,
                            why,
                        )
                yield event

    def _failed(self, turn: Turn, started: float, why: str) -> None:
        log.error(
            "[github] turn failed: turn=%s session=%s (%dms): %s",
            turn.id,
            turn.intent.session,
            _ms(started),
            why,
        )


def describe(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}", 500)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
