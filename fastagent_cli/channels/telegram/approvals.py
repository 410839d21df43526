"""Tool approvals in Telegram: an inline keyboard under the request, answered by a button press.

When a turn's tool call waits for approval (the contract's ``approval_requested``), the chat gets
a message naming the tool and its arguments with two inline buttons, ``callback_data``
``fa:ap:<approval id>:y`` / ``:n``. A press arrives as a ``callback_query`` update on the
channel's own webhook (the ingress has checked Telegram's secret token, so it is the channel's own
update, never a forged one), and is answered through the session hub
(``answer_approval(..., by="telegram:<user id>")``) when the presser may answer: the person who
asked the turn, or an id in ``[approval] allow_from``; anyone else in a group gets an alert and
changes nothing. The message is then edited to say who decided (the keyboard leaves with the
edit: the press names the message); every press gets its ``answerCallbackQuery``. The request is
kept in the channel's ``approvals`` state before it is posted
(:class:`~fastagent_cli.channels.kit.approvals.ApprovalAsks`), so a press after a restart answers it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from html import escape
from typing import Any

from fastagent_cli.channels.kit.approvals import GONE, NOT_YOURS, ApprovalAsks, answer_press, new_ask
from fastagent_cli.channels.kit.runtime import BackgroundTasks
from fastagent_cli.channels.telegram.api import BotApi, Target, TelegramApiError
from fastagent_cli.contract import ApprovalRequested
from fastagent_cli.control import Decision, SessionControl

__all__ = ["CALLBACK_PREFIX", "TelegramApprovals", "keyboard"]

log = logging.getLogger("fastagent.channel")

CALLBACK_PREFIX = "fa:ap:"
_ARGS_MAX = 3000


def keyboard(approval_id: str) -> dict[str, Any]:
    return {
        "inline_keyboard": [
            [
                {"text": "✅ Approve", "callback_data": f"{CALLBACK_PREFIX}{approval_id}:y"},
                {"text": "❌ Deny", "callback_data": f"{CALLBACK_PREFIX}{approval_id}:n"},
            ]
        ]
    }


def _request_text(event: ApprovalRequested) -> str:
    args = json.dumps(event.args, ensure_ascii=False, indent=2)
    if len(args) > _ARGS_MAX:
        args = args[: _ARGS_MAX - 1] + "…"
    return f"🔐 Approve <b>{escape(event.tool)}</b>?\n<pre>{escape(args)}</pre>"


def _who(sender: Mapping[str, Any]) -> str:
    name = sender.get("username")
    return f"@{name}" if name else str(sender.get("first_name") or sender.get("id"))


class TelegramApprovals:
    """The approval keyboards of one mounted channel (its open asks: :attr:`asks`)."""

    def __init__(
        self, api: BotApi, control: SessionControl | None, tasks: BackgroundTasks, asks: ApprovalAsks
    ) -> None:
        self.api = api
        self.control = control
        self.tasks = tasks
        self.asks = asks

    async def ask(self, record: Mapping[str, Any], event: ApprovalRequested) -> None:
        """Keep the request, then post it with its buttons into the turn's chat and thread."""
        text = _request_text(event)
        target = Target(record["chat"], record.get("thread"), record.get("reply_to"))
        await self.asks.add(
            event.id, new_ask(record["session"], record.get("sender"), event, chat=target.chat_id, text=text)
        )
        params: dict[str, Any] = {
            "chat_id": target.chat_id,
            "message_thread_id": target.thread_id,
            "text": text,
            "parse_mode": "HTML",
            "reply_markup": keyboard(event.id),
        }
        try:
            await self.api.call("sendMessage", params)
        except TelegramApiError as exc:
            log.warning("[telegram] could not post approval %s (answer it elsewhere): %s", event.id, exc)

    async def on_callback(self, update: Mapping[str, Any]) -> bool:
        """Handle a ``callback_query`` update; ``False`` when it is not an approval button's."""
        query = update.get("callback_query")
        if not isinstance(query, Mapping):
            return False
        data = str(query.get("data") or "")
        if not data.startswith(CALLBACK_PREFIX) or data[-2:] not in (":y", ":n"):
            return False
        approval_id, yes = data[len(CALLBACK_PREFIX) : -2], data.endswith(":y")
        raw_sender = query.get("from")
        sender: Mapping[str, Any] = raw_sender if isinstance(raw_sender, Mapping) else {}
        user = str(sender.get("id"))
        query_id = str(query.get("id") or "")
        raw_message = query.get("message")
        message: Mapping[str, Any] = raw_message if isinstance(raw_message, Mapping) else {}
        chat = (message.get("chat") or {}).get("id")
        ask = self.asks.get(approval_id)
        if ask is None or str(chat) != str(ask.get("chat")):
            self._reply(query_id, GONE)
            return True
        decision: Decision = "approve" if yes else "deny"
        press, _ = await answer_press(
            self.asks, self.control, approval_id, user, decision, by=f"telegram:{user}"
        )
        if press != "answered":
            if press == "refused":
                self._reply(query_id, NOT_YOURS, alert=True)
            else:
                self._reply(query_id, GONE if press == "gone" else "Could not answer: try again.")
            return True
        verdict = "✅ Approved" if yes else "❌ Denied"
        self._reply(query_id, verdict)
        message_id = message.get("message_id")
        if isinstance(message_id, int):
            closed = f"{ask.get('text', '')}\n{verdict} by {escape(_who(sender))}"
            params = {"chat_id": chat, "message_id": message_id, "text": closed, "parse_mode": "HTML"}
            self.tasks.spawn(self._call("editMessageText", params))
        return True

    def _reply(self, query_id: str, text: str, *, alert: bool = False) -> None:
        params = {"callback_query_id": query_id, "text": text, "show_alert": alert}
        self.tasks.spawn(self._call("answerCallbackQuery", params))

    async def _call(self, method: str, params: dict[str, Any]) -> None:
        try:
            await self.api.call(method, params)
        except TelegramApiError as exc:
            log.warning("[telegram] %s for an approval failed: %s", method, exc)
