"""Tool approvals in Telegram: an inline keyboard under the request, answered by a button press.

When a turn's tool call waits for approval (the contract's ``approval_requested``), the chat gets
a message naming the tool and its arguments with two inline buttons, ``callback_data``
``fa:ap:<approval id>:y`` / ``:n``. A press arrives as a ``callback_query`` update on the
channel's own webhook (the ingress has checked Telegram's secret token, so it is the channel's own
update, never a forged one), and is answered through the session hub
(``answer_approval(..., by="telegram:<user id>")``) when the presser may answer: the person who
asked the turn, or an id in ``[approval] allow_from``; anyone else in a group gets an alert and
changes nothing. The message is then edited to say who decided (the keyboard leaves with the
edit); every press gets its ``answerCallbackQuery``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

from fastagent_cli.channels.kit.runtime import BackgroundTasks
from fastagent_cli.channels.telegram.api import BotApi, Target, TelegramApiError
from fastagent_cli.contract import ApprovalRequested
from fastagent_cli.control import Decision, SessionControl

__all__ = ["CALLBACK_PREFIX", "TelegramApprovals", "keyboard"]

log = logging.getLogger("fastagent.channel")

CALLBACK_PREFIX = "fa:ap:"
_ARGS_MAX = 3000
NOT_YOURS = "Only the person who asked (or someone on the approval list) can answer this."
GONE = "This request is no longer waiting for an answer."


@dataclass(slots=True)
class _Ask:
    session: str
    chat: int | str
    message_id: int
    tool: str
    asker: str | None
    answerers: tuple[str, ...]
    text: str


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
    """The approval keyboards of one mounted channel (asks of this process, by approval id)."""

    def __init__(self, api: BotApi, control: SessionControl | None, tasks: BackgroundTasks) -> None:
        self.api = api
        self.control = control
        self.tasks = tasks
        self._asks: dict[str, _Ask] = {}

    async def ask(self, record: Mapping[str, Any], event: ApprovalRequested) -> None:
        """Post the request with its buttons into the turn's chat and thread."""
        text = _request_text(event)
        target = Target(record["chat"], record.get("thread"), record.get("reply_to"))
        params: dict[str, Any] = {
            "chat_id": target.chat_id,
            "message_thread_id": target.thread_id,
            "text": text,
            "parse_mode": "HTML",
            "reply_markup": keyboard(event.id),
        }
        try:
            sent = await self.api.call("sendMessage", params)
        except TelegramApiError as exc:
            log.warning("[telegram] could not post approval %s (answer it elsewhere): %s", event.id, exc)
            return
        sender = record.get("sender")
        message_id = sent.get("message_id") if isinstance(sent, dict) else None
        if isinstance(message_id, int):
            asker = None if sender is None else str(sender)
            self._asks[event.id] = _Ask(
                record["session"], target.chat_id, message_id, event.tool, asker, event.answerers, text
            )

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
        ask = self._asks.get(approval_id)
        chat = (query.get("message") or {}).get("chat", {}).get("id")
        if ask is None or self.control is None or str(chat) != str(ask.chat):
            self._reply(query_id, GONE)
            return True
        if user != ask.asker and user not in ask.answerers:
            log.info("[telegram] user %s may not answer approval %s: refused", user, approval_id)
            self._reply(query_id, NOT_YOURS, alert=True)
            return True
        decision: Decision = "approve" if yes else "deny"
        session = self.control.sessions.get(ask.session)
        result = await session.answer_approval(approval_id, decision, by=f"telegram:{user}")
        if not result.ok:
            self._reply(query_id, GONE if result.code != "request_failed" else "Could not answer: try again.")
            if result.code in ("approval_closed", "no_such_approval"):
                self._asks.pop(approval_id, None)
            return True
        del self._asks[approval_id]
        verdict = "✅ Approved" if yes else "❌ Denied"
        self._reply(query_id, verdict)
        closed = f"{ask.text}\n{verdict} by {escape(_who(sender))}"
        self.tasks.spawn(self._edit(ask, closed))
        return True

    def _reply(self, query_id: str, text: str, *, alert: bool = False) -> None:
        params = {"callback_query_id": query_id, "text": text, "show_alert": alert}
        self.tasks.spawn(self._call("answerCallbackQuery", params))

    async def _edit(self, ask: _Ask, text: str) -> None:
        params = {"chat_id": ask.chat, "message_id": ask.message_id, "text": text, "parse_mode": "HTML"}
        await self._call("editMessageText", params)

    async def _call(self, method: str, params: dict[str, Any]) -> None:
        try:
            await self.api.call(method, params)
        except TelegramApiError as exc:
            log.warning("[telegram] %s for an approval failed: %s", method, exc)
