"""The approval requests a channel posted, kept across restarts, and the answer to a press.

A channel's approvals (Telegram's keyboards, Slack's buttons, Feishu/Lark's cards, GitHub's
comments) post a request when a turn's tool call waits for a person (the contract's
``approval_requested``). What answering it needs is an *ask*: the session, the person who asked the
turn (``asker``), the ``[approval] allow_from`` ids (``answerers``), the tool, and what the platform
shows. :class:`ApprovalAsks` keeps the asks by approval id in the channel's state (the
``approvals`` document, journaled like the turns) and is written *before* the request is posted,
so a press after ``start`` restarted still finds its session.

:func:`answer_press` is a press (a button, a ``/approve`` comment): anyone but the asker and the
allow-list (or, on GitHub, whom the platform vouches for: write access) is refused and logged, and
nothing changes; else it answers through the session hub
(``answer_approval(..., by="<platform>:<user>")``). An answered, expired or withdrawn request
leaves the store; so does the oldest ask beyond :data:`MAX_ASKS` (a request nobody ever answers).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from fastagent_cli.channels.kit.journal import JournaledState, StateWriteError
from fastagent_cli.contract import ApprovalRequested
from fastagent_cli.control import APPROVAL_CLOSED, NO_SUCH_APPROVAL, Decision, SessionControl
from fastagent_cli.messages import now_ms

__all__ = ["GONE", "MAX_ASKS", "NOT_YOURS", "ApprovalAsks", "Ask", "Press", "answer_press", "new_ask"]

log = logging.getLogger("fastagent.channel")

NOT_YOURS = "Only the person who asked (or someone on the approval list) can answer this."
GONE = "This request is no longer waiting for an answer."
MAX_ASKS = 500

Ask = dict[str, Any]
"""``{session, asker, answerers, tool, args, at}`` and the platform's own fields (JSON)."""

Press = Literal["answered", "refused", "gone", "failed"]
"""What a press came to: answered; refused (not the asker nor on the list); ``gone`` (no such
request waits any more); ``failed`` (the hub could not answer now: try again)."""


def new_ask(session: str, asker: object, event: ApprovalRequested, **platform: Any) -> Ask:
    """The ask of ``event`` in a turn of ``session`` asked by ``asker`` (``None``: nobody known)."""
    return {
        "session": session,
        "asker": None if asker is None else str(asker),
        "answerers": list(event.answerers),
        "tool": event.tool,
        "args": event.args,
        "at": now_ms(),
        **platform,
    }


def _is_ask(ask: Any) -> bool:
    return (
        isinstance(ask, dict)
        and isinstance(ask.get("session"), str)
        and (ask.get("asker") is None or isinstance(ask.get("asker"), str))
        and isinstance(ask.get("answerers"), list)
        and isinstance(ask.get("tool"), str)
        and isinstance(ask.get("at"), int)
    )


class ApprovalAsks(JournaledState[dict[str, Ask]]):
    """The channel's open asks by approval id (see the module doc)."""

    name = "approvals"

    def empty(self) -> dict[str, Ask]:
        return {}

    def decode(self, data: Any) -> dict[str, Ask]:
        if not isinstance(data, dict) or not all(_is_ask(a) for a in data.values()):
            raise ValueError("expected an object of asks")
        return dict(data)

    def encode(self, state: dict[str, Ask]) -> Any:
        return state

    def apply(self, state: dict[str, Ask], op: Mapping[str, Any]) -> None:
        kind, approval_id = op.get("op"), op.get("id")
        if not isinstance(approval_id, str):
            raise ValueError("an operation needs an approval id")
        if kind == "add":
            if not _is_ask(op.get("ask")):
                raise ValueError("an ask with a missing or mistyped field")
            state[approval_id] = dict(op["ask"])
            while len(state) > MAX_ASKS:
                del state[min(state, key=lambda key: (state[key]["at"], key))]
        elif kind == "remove":
            state.pop(approval_id, None)
        else:
            raise ValueError(f"unknown operation {kind!r}")

    async def add(self, approval_id: str, ask: Ask) -> None:
        """Keep ``ask`` (written whole before this returns; a failed write is logged: the request
        is still posted, and answerable until a restart)."""
        try:
            await self.commit({"op": "add", "id": approval_id, "ask": ask}, sync=False)
        except StateWriteError as exc:
            log.warning("%s approval %s is not kept across a restart: %s", self.label, approval_id, exc)
            self.state[approval_id] = ask

    def get(self, approval_id: str) -> Ask | None:
        return self.state.get(approval_id)

    def of(self, session: str) -> dict[str, Ask]:
        """The open asks of ``session``, oldest first."""
        found = [(k, a) for k, a in self.state.items() if a["session"] == session]
        return dict(sorted(found, key=lambda item: item[1]["at"]))

    def discard(self, approval_id: str) -> None:
        if approval_id in self.state:
            self.remember({"op": "remove", "id": approval_id})


def may_answer(ask: Ask, user: str) -> bool:
    return user == ask.get("asker") or user in ask.get("answerers", ())


async def answer_press(
    asks: ApprovalAsks,
    control: SessionControl | None,
    approval_id: str,
    user: str,
    decision: Decision,
    *,
    by: str,
    reason: str | None = None,
    vouched: bool = False,
) -> tuple[Press, Ask | None]:
    """Answer ``approval_id`` for ``user`` (see the module doc), and the ask it answered.
    ``vouched``: the platform itself says ``user`` may answer (GitHub: write access)."""
    ask = asks.get(approval_id)
    if ask is None or control is None:
        return "gone", None
    if not vouched and not may_answer(ask, user):
        log.info("%s user %s may not answer approval %s: refused", asks.label, user, approval_id)
        return "refused", ask
    session = control.sessions.get(ask["session"])
    result = await session.answer_approval(approval_id, decision, by=by, reason=reason)
    if result.ok:
        asks.discard(approval_id)
        return "answered", ask
    if result.code in (APPROVAL_CLOSED, NO_SUCH_APPROVAL):
        asks.discard(approval_id)
        return "gone", ask
    log.warning("%s could not answer approval %s: %s", asks.label, approval_id, result.error)
    return "failed", ask
