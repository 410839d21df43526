"""Notices: input that arrives on its own, not typed by a user, and the inbox that runs it.

A :class:`Notice` (``source``, ``text``) is input like a user message (asyncai's rule): on an idle
session it starts a run at once; during a run it is appended and sets the run's follow-up flag,
so N notices during one run cause exactly **one** follow-up turn with the full history, the
run's answer placed before them. Notices are recorded as notices (pi ``custom_message`` entries
of type ``fastagent:notice``), never as user messages.

Where they come from: the definition's ``On Start`` section (sent once when ``dev`` / ``start``
begin serving, source ``prompt:on-start``), MCP resource watches (``mcp:<server>``), and any host
that posts one. A reply of exactly ``NO_REPLY`` means "nothing to say": it is kept in the session
and not delivered.

The :class:`Inbox` protocol is what assembly hands hosts (``OpenedAgent.inbox(sink)``); the
engine implements it. Lines streamed on ``fastagent chat --json`` use it too: they are user
messages that follow the same coalescing rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fastagent_cli.contract import AgentEvent, Prompt

__all__ = [
    "NOTICE_SESSION",
    "NOTICE_TYPE",
    "NO_REPLY",
    "ON_START_SOURCE",
    "Inbox",
    "InboxSink",
    "InputItem",
    "Notice",
    "is_no_reply",
]

NO_REPLY = "NO_REPLY"
"""An answer of exactly this text (surrounding whitespace aside) is not delivered."""
NOTICE_TYPE = "fastagent:notice"
"""The ``customType`` of the ``custom_message`` entry a notice is recorded as."""
NOTICE_SESSION = "on-start"
"""The session background notices (On Start, resource watches) run in."""
ON_START_SOURCE = "prompt:on-start"


@dataclass(frozen=True, slots=True)
class Notice:
    """Input that arrived on its own: where it came from and what it says."""

    source: str
    text: str

    def to_json(self) -> dict[str, str]:
        return {"source": self.source, "text": self.text}


InputItem = Prompt | Notice
"""What an inbox takes: a user message or a notice."""


def is_no_reply(text: str) -> bool:
    return text.strip() == NO_REPLY


class InboxSink(Protocol):
    """Where an inbox reports the runs it drives (called on the event loop; must not block)."""

    def on_input(self, session: str, kind: str, data: Mapping[str, Any]) -> None:
        """An input entered the conversation: ``kind`` is ``user_message`` (``{entryId, text}``) or
        ``notice`` (``{entryId, source, text}``)."""
        ...

    def on_event(self, session: str, event: AgentEvent) -> None:
        """An event of a run the inbox drives, its terminal included (the invoke stream)."""
        ...

    def on_reply(self, session: str, text: str) -> None:
        """A turn ended with this answer (``NO_REPLY`` included: the sink decides)."""
        ...


class Inbox(Protocol):
    """Runs input as it arrives, coalescing what arrives during a run into one follow-up."""

    def post(self, session: str, item: InputItem) -> None:
        """Deliver ``item`` (never blocks): starts a run on an idle session, else joins the
        active run's follow-ups (coalesced) or the next run."""
        ...

    def post_many(self, session: str, items: Sequence[InputItem]) -> None:
        """Deliver several items as one input: on an idle session they open one run together."""
        ...

    def busy(self) -> bool:
        """Whether a run is in flight or input is waiting."""
        ...

    async def drain(self) -> None:
        """Wait until every posted item has run and the inbox is idle."""
        ...

    async def aclose(self) -> None:
        """Stop: abort the runs it drives, drop what waits."""
        ...
