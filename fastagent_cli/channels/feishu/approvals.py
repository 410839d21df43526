"""Tool approvals in Feishu/Lark: a card with Approve / Deny buttons, answered by a card action.

When a turn's tool call waits for approval (the contract's ``approval_requested``), the turn's
chat gets an interactive card (schema 2.0) naming the tool and its arguments, with two buttons
whose ``callback`` behaviour carries ``{"fa_approval": <id>, "decision": "approve"|"deny"}``. A
press arrives as a ``card.action.trigger`` event on the channel's own webhook, after the same
checks as every event (verification token, and signature and decryption when an encrypt key is
set); it answers through the session hub (``by="<kind>:<open_id>"``) when the operator asked the
turn or is on ``[approval] allow_from``. The callback's answer is a toast, and for a decision the
card replaced by one that says who decided (no buttons); anyone else gets an error toast and the
card stays as it was. The same press arrives as a ``card`` frame over the long connection
(:mod:`~fastagent_cli.channels.feishu.ws`), answered the same way in the response frame. The
request is kept in the channel's ``approvals`` state before it is posted
(:class:`~fastagent_cli.channels.kit.approvals.ApprovalAsks`), so a press after a restart answers it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from fastagent_cli.channels.feishu.api import FeishuApi, FeishuApiError
from fastagent_cli.channels.kit.approvals import GONE, NOT_YOURS, ApprovalAsks, answer_press, new_ask
from fastagent_cli.contract import ApprovalRequested
from fastagent_cli.control import Decision, SessionControl

__all__ = ["CARD_ACTION", "FeishuApprovals", "approval_card"]

log = logging.getLogger("fastagent.channel")

CARD_ACTION = "card.action.trigger"
_ARGS_MAX = 2500


def _args(args: Any) -> str:
    text = json.dumps(args, ensure_ascii=False, indent=2)
    return text if len(text) <= _ARGS_MAX else text[: _ARGS_MAX - 1] + "…"


def approval_card(approval_id: str, tool: str, args: Any, closed: str | None = None) -> dict[str, Any]:
    """The request's card; ``closed``: the line saying who decided (then no buttons)."""
    elements: list[dict[str, Any]] = [
        {"tag": "markdown", "content": f"**Approve `{tool}`?**\n```json\n{_args(args)}\n```"}
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
                        {"type": "callback", "value": {"fa_approval": approval_id, "decision": decision}}
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
    """The approval cards of one mounted channel (its open asks: :attr:`asks`)."""

    def __init__(self, api: FeishuApi, control: SessionControl | None, kind: str, asks: ApprovalAsks) -> None:
        self.api = api
        self.control = control
        self.kind = kind
        self.asks = asks

    async def ask(self, record: Mapping[str, Any], event: ApprovalRequested) -> None:
        """Keep the request, then post its card into the turn's chat (or thread)."""
        await self.asks.add(event.id, new_ask(record["session"], record.get("asker"), event))
        content = json.dumps(approval_card(event.id, event.tool, event.args), ensure_ascii=False)
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

    async def on_action(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """The answer to a ``card.action.trigger`` callback (a toast, maybe a new card)."""
        action = event.get("action") if isinstance(event.get("action"), Mapping) else {}
        value = action.get("value") if isinstance(action, Mapping) else None
        if not isinstance(value, Mapping) or not isinstance(value.get("fa_approval"), str):
            return {}
        approval_id = value["fa_approval"]
        operator = event.get("operator") if isinstance(event.get("operator"), Mapping) else {}
        user = str(operator.get("open_id") if isinstance(operator, Mapping) else None)
        decision: Decision = "approve" if value.get("decision") == "approve" else "deny"
        press, ask = await answer_press(
            self.asks, self.control, approval_id, user, decision, by=f"{self.kind}:{user}"
        )
        if press == "refused":
            return _toast("error", NOT_YOURS)
        if press != "answered" or ask is None:
            return _toast("info", GONE)
        verdict = "✅ Approved" if decision == "approve" else "❌ Denied"
        closed = f"{verdict} by <at id={user}></at>"
        card = approval_card(approval_id, ask["tool"], ask.get("args"), closed=closed)
        return {**_toast("success", verdict), "card": {"type": "raw", "data": card}}
