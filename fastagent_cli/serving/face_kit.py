"""What every protocol face (:mod:`fastagent_cli.serving.faces`) shares: one turn run, and what
the agent says about itself. Kept outside ``serving/faces/`` because a face package is imported
by its own modules only (the faces load by name, when switched on).

**One turn** (:func:`run_turn`): the agent's events folded into the answer, with a callback per
event (progress) and the turn aborted when the caller is cancelled::

    outcome = await run_turn(agent, "s1", "hello", on_event=report)
    if outcome.failed is not None: ...          # Failed (session_busy, aborted, a model error)
    outcome.text                                # the answer's text deltas joined

The faces share the agent, and with it the session lease: a turn on a busy session is a
``Failed`` with code ``session_busy`` here as on ``/invoke`` (each face answers it in its own
protocol's words).

**The agent's identity** (:func:`identity_of`): its name, a description from the persona, and its
skills (an MCP server's ``serverInfo`` and prompts, an A2A agent card).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from fastagent_cli import telemetry
from fastagent_cli._version import __version__
from fastagent_cli.assembly import OpenedAgent
from fastagent_cli.contract import (
    SESSION_BUSY_CODE,
    Agent,
    AgentEvent,
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

__all__ = [
    "AgentIdentity",
    "EventCallback",
    "SkillInfo",
    "TurnOutcome",
    "describe_event",
    "describe_persona",
    "identity_of",
    "new_session_id",
    "run_turn",
]

EventCallback = Callable[[AgentEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    text: str
    failed: Failed | None = None

    @property
    def busy(self) -> bool:
        return self.failed is not None and self.failed.code == SESSION_BUSY_CODE


def new_session_id(prefix: str) -> str:
    """A fresh session id for a client that did not name one (``mcp-3f9c2a1b7d04``)."""
    return f"{prefix}-{secrets.token_hex(6)}"


async def run_turn(
    agent: Agent, session: str, text: str, on_event: EventCallback | None = None, *, trigger: str = "face"
) -> TurnOutcome:
    """Run one turn to its terminal event, under a root span of its trigger (``mcp``, ``a2a``).
    Cancelling the caller closes the agent's stream, which aborts the run (its tools stopped, the
    session's lease released)."""
    attributes = {"gen_ai.conversation.id": session}
    with telemetry.root_span(f"{trigger} turn", trigger=trigger, attributes=attributes):
        return await _run_turn(agent, session, text, on_event)


async def _run_turn(agent: Agent, session: str, text: str, on_event: EventCallback | None) -> TurnOutcome:
    parts: list[str] = []
    async with closing(agent.invoke(Scope(session), Prompt(text))) as events:
        async for event in events:
            if on_event is not None:
                await on_event(event)
            if isinstance(event, Text):
                parts.append(event.delta)
            elif isinstance(event, Completed):
                return TurnOutcome("".join(parts))
            elif isinstance(event, Failed):
                return TurnOutcome("".join(parts), event)
    return TurnOutcome("".join(parts), Failed("the agent's stream ended without a terminal event", True))


def describe_event(event: AgentEvent) -> str | None:
    """A one-line progress message for an event (``None``: nothing worth saying). Deltas of one
    kind say the same thing, so a face that reports only changes sends one line per phase."""
    if isinstance(event, ToolStarted):
        return f"running tool {event.name}"
    if isinstance(event, ToolEnded):
        return "tool failed" if event.is_error else "tool done"
    if isinstance(event, Retrying):
        return f"model unavailable, retrying ({event.attempt}/{event.max_attempts})"
    if isinstance(event, Thinking):
        return "thinking"
    if isinstance(event, Text):
        return "answering"
    return None


DESCRIPTION_MAX_CHARS = 300


@dataclass(frozen=True, slots=True)
class SkillInfo:
    name: str
    description: str
    path: Path

    async def instructions(self) -> str:
        """The skill file's body (its frontmatter taken off), read off the event loop."""
        text = await asyncio.to_thread(self.path.read_text, encoding="utf-8", errors="replace")
        return strip_frontmatter(text)


@dataclass(frozen=True, slots=True)
class AgentIdentity:
    name: str
    description: str
    version: str
    opened: OpenedAgent

    def skills(self) -> list[SkillInfo]:
        """The skills as the next turn sees them (re-read when a skill file changes)."""
        return [SkillInfo(s.name, s.description, s.file_path) for s in self.opened.skills()]


def identity_of(opened: OpenedAgent) -> AgentIdentity:
    persona = opened.definition().persona
    return AgentIdentity(opened.name, describe_persona(opened.name, persona), __version__, opened)


def describe_persona(name: str, persona: str | None) -> str:
    """The persona's first paragraph of prose (headings and On Start left out), at most
    :data:`DESCRIPTION_MAX_CHARS`; without a persona, a plain sentence naming the agent."""
    paragraph: list[str] = []
    for raw in (persona or "").splitlines():
        line = raw.strip()
        if line.startswith(("#", "---")):
            if paragraph:
                break
            continue
        if not line:
            if paragraph:
                break
            continue
        paragraph.append(line)
    text = " ".join(paragraph)
    if not text:
        return f"The {name} agent, served by fastagent."
    if len(text) > DESCRIPTION_MAX_CHARS:
        text = text[: DESCRIPTION_MAX_CHARS - 1].rstrip() + "…"
    return text


def strip_frontmatter(text: str) -> str:
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end >= 0:
            return text[end + 4 :].lstrip("\n")
    return text
