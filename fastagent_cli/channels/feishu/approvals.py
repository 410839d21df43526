"""Tool approvals in Feishu/Lark: a card with Approve / Deny buttons, answered by a card action.

When a turn's tool call waits for approval (the contract's ``approval_requested``), the turn's
chat gets an interactive card (schema 2.0) naming the tool and its arguments, with two buttons
whose ``callback`` behaviour carries ``{"fa_approval": <id>, "decision": "approve"|"deny"}``. A
press arrives as a ``card.action.trigger`` event on the channel's own webhook, after the same
checks as every event (verification token, and signature and decryption when an encrypt key is
set); it answers through the session hub (``by="<kind>:<open_id>"``) when the operator asked the
turn or is on ``[approval] allow_from``. The callback's answer is a toast, and for a decision the
card replaced by one that says who decided (no buttons); anyone else gets an error toast and the
card stays as it was.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastagent_cli.channels.feishu.api import FeishuApi, FeishuApiError
from fastagent_cli.contract import ApprovalRequested
from fastagent_cli.control import Decision, SessionControl

__all__ = ["CARD_ACTION", "FeishuApprovals", "approval_card"]

log = logging.getLogger("fastagent.channel")

CARD_ACTION = "card.action.trigger"
NOT_YOURS = "Only the person who asked (or someone on the approval list) can answer this."
GONE = "This request is no longer waiting for an answer."
_ARGS_MAX = 2500


@dataclass(slots=True)
class _Ask:
    session: str
    tool: str
    asker: str | None
    answerers: tuple[str, ...]
    summary: str


def _args(event: ApprovalRequested) -> str:
    text = json.dumps(event.args, ensure_ascii=False, indent=2)
    return text if len(text) <= _ARGS_MAX else text[: _ARGS_MAX - 1] + "…"


def approval_card(event: ApprovalRequested, closed: str | None = None) -> dict[str, Any]:
    """The request's card; ``closed``: the line saying who decided (then no buttons)."""
    elements: list[dict[str, Any]] = [
        {"tag": "markdown", "content": f"**Approve `{event.tool}`?**\n```json\n{_args(event)}\n```"}
    ]
    if closed is not None:
        elements.append({"tag": "markdown", "content": closed})
    else:
        for decision, label, kind in (("approve", "Approve", "primary"), ("deny", "Deny", "danger")):
            elements.append(
                {
                    "tag": "button",
                    "text": {"tag": "plain_text", "content": label},
                    "type": kind,
                    "behaviors": [
                        {"type": "callback", "value": {"fa_approval": event.id, "decision": decision}}
                    ],
                }
            )
    return {
        "schema": "2.0",
        "header": {"title": {"tag": "plain_text", "content": "Approval needed"}},
        "body": {"elements": elements},
    }


def _toast(kind: str, text: str) -> dict[str, Any]:
    return {"toast": {"type": kind, "content": text}}


class FeishuApprovals:
    """The approval cards of one mounted channel (asks of this process, by approval id)."""

    def __init__(self, api: FeishuApi, control: SessionControl | None, kind: str) -> None:
        self.api = api
        self.control = control
        self.kind = kind
        self._asks: dict[str, tuple[_Ask, ApprovalRequested]] = {}

    async def ask(self, record: Mapping[str, Any], event: ApprovalRequested) -> None:
        content = json.dumps(approval_card(event), ensure_ascii=False)
        try:
            reply_to = record.get("reply_to")
            if isinstance(reply_to, str):
                await self.api.reply(
                    reply_to, "interactive", content, in_thread=bool(record.get("in_thread"))
                )
            else:
                await self.api.send(str(record["chat"]), "interactive", content)
        except FeishuApiError as exc:
            log.warning("[%s] could not post approval %s (answer it elsewhere): %s", self.kind, event.id, exc)
            return
        asker = record.get("asker")
        ask = _Ask(record["session"], event.tool, None if asker is None else str(asker), event.answerers, "")
        self._asks[event.id] = (ask, event)

    async def on_action(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """The answer to a ``card.action.trigger`` callback (a toast, maybe a new card)."""
        action = event.get("action") if isinstance(event.get("action"), Mapping) else {}
        value = action.get("value") if isinstance(action, Mapping) else None
        if not isinstance(value, Mapping) or not isinstance(value.get("fa_approval"), str):
            return {}
        approval_id = value["fa_approval"]
        operator = event.get("operator") if isinstance(event.get("operator"), Mapping) else {}
        user = str(operator.get("open_id") if isinstance(operator, Mapping) else None)
        found = self._asks.get(approval_id)
        if found is None or self.control is None:
            return _toast("info", GONE)
        ask, request = found
        if user != ask.asker and user not in ask.answerers:
            log.info("[%s] user %s may not answer approval %s: refused", self.kind, user, approval_id)
            return _toast("error", NOT_YOURS)
        decision: Decision = "approve" if value.get("decision") == "approve" else "deny"
        result = await self.control.sessions.get(ask.session).answer_approval(
            approval_id, decision, by=f"{self.kind}:{user}"
        )
        if not result.ok:
            if result.code in ("approval_closed", "no_such_approval"):
                self._asks.pop(approval_id, None)
            return _toast("info", GONE)
        del self._asks[approval_id]
        verdict = "✅ Approved" if decision == "approve" else "❌ Denied"
        card = approval_card(request, closed=f"{verdict} by <at id={user}></at>")
        return {**_toast("success", verdict), "card": {"type": "raw", "data": card}}
