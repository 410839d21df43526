"""Tool approvals in Slack: Block Kit buttons under the request, pressed through interactivity.

When a turn's tool call waits for approval (the contract's ``approval_requested``), the thread
gets a message naming the tool and its arguments with an ``actions`` block of two buttons
(``action_id`` ``fa_approval_approve`` / ``fa_approval_deny``, ``value`` the approval id). Slack
posts a press to the app's Interactivity Request URL, ``POST /slack/interactivity``, as a form
field ``payload`` (a ``block_actions`` JSON), signed like the events (``X-Slack-Signature`` over
the raw body: anything else is a 401). The press answers through the session hub
(``by="slack:<user id>"``) when the presser asked the turn or is on ``[approval] allow_from``;
anyone else gets an ephemeral note through the payload's ``response_url`` and nothing changes.
Answered, the message the press names is updated to say who decided (the buttons leave with the
update). The request is kept in the channel's ``approvals`` state before it is posted
(:class:`~fastagent_cli.channels.kit.approvals.ApprovalAsks`), so a press after a restart answers it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import httpx
from aiohttp import web

from fastagent_cli.channels.kit.approvals import GONE, NOT_YOURS, ApprovalAsks, answer_press, new_ask
from fastagent_cli.channels.kit.runtime import BackgroundTasks
from fastagent_cli.channels.slack.api import SlackApi, SlackApiError
from fastagent_cli.channels.slack.verify import signed_body
from fastagent_cli.contract import ApprovalRequested
from fastagent_cli.control import Decision, SessionControl
from fastagent_cli.serving.body import text_response

__all__ = ["APPROVE_ACTION", "DENY_ACTION", "INTERACTIVITY_ROUTE", "SlackApprovals", "approval_blocks"]

log = logging.getLogger("fastagent.channel")

INTERACTIVITY_ROUTE = "/slack/interactivity"
APPROVE_ACTION = "fa_approval_approve"
DENY_ACTION = "fa_approval_deny"
_ARGS_MAX = 2500


def approval_blocks(event: ApprovalRequested) -> tuple[str, list[dict[str, Any]]]:
    """The fallback text and the blocks of a request."""
    args = json.dumps(event.args, ensure_ascii=False, indent=2)
    if len(args) > _ARGS_MAX:
        args = args[: _ARGS_MAX - 1] + "…"
    summary = f":lock: Approve `{event.tool}`?"
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"{summary}\n```{args}```"}},
        {
            "type": "actions",
            "block_id": f"fa_approval:{event.id}",
            "elements": [
                {
                    "type": "button",
                    "action_id": APPROVE_ACTION,
                    "text": {"type": "plain_text", "text": "Approve"},
                    "style": "primary",
                    "value": event.id,
                },
                {
                    "type": "button",
                    "action_id": DENY_ACTION,
                    "text": {"type": "plain_text", "text": "Deny"},
                    "style": "danger",
                    "value": event.id,
                },
            ],
        },
    ]
    return f"Approve {event.tool}?", blocks


@dataclass(eq=False, slots=True)
class SlackApprovals:
    """The approval buttons of one mounted channel (its open asks: :attr:`asks`)."""

    api: SlackApi
    control: SessionControl | None
    secret: str
    """The signing secret the presses are signed with."""
    tasks: BackgroundTasks
    asks: ApprovalAsks

    async def ask(self, record: Mapping[str, Any], event: ApprovalRequested) -> None:
        """Keep the request, then post it with its buttons into the turn's thread."""
        text, blocks = approval_blocks(event)
        summary = blocks[0]["text"]["text"]
        await self.asks.add(event.id, new_ask(record["session"], record.get("user"), event, summary=summary))
        params = {
            "channel": record["channel"],
            "thread_ts": record.get("thread"),
            "text": text,
            "blocks": blocks,
        }
        try:
            await self.api.call("chat.postMessage", params)
        except SlackApiError as exc:
            log.warning("[slack] could not post approval %s (answer it elsewhere): %s", event.id, exc)

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        """``POST /slack/interactivity``: verify, then answer the press (200 at once, as Slack asks)."""
        raw = await signed_body(request, self.secret, "an interaction")
        if isinstance(raw, web.Response):
            return raw
        try:
            payload = json.loads(parse_qs(raw.decode("utf-8")).get("payload", [""])[0])
        except (ValueError, UnicodeDecodeError):
            return text_response("expected a form field payload holding JSON\n", 400)
        if isinstance(payload, dict) and payload.get("type") == "block_actions":
            await self._press(payload)
        return web.Response(status=200)

    async def _press(self, payload: Mapping[str, Any]) -> None:
        actions = [a for a in payload.get("actions") or [] if isinstance(a, Mapping)]
        action = next((a for a in actions if a.get("action_id") in (APPROVE_ACTION, DENY_ACTION)), None)
        if action is None:
            return
        approval_id = str(action.get("value") or "")
        user = str((payload.get("user") or {}).get("id"))
        response_url = payload.get("response_url")
        decision: Decision = "approve" if action.get("action_id") == APPROVE_ACTION else "deny"
        press, ask = await answer_press(
            self.asks, self.control, approval_id, user, decision, by=f"slack:{user}"
        )
        if press != "answered" or ask is None:
            self._ephemeral(response_url, NOT_YOURS if press == "refused" else GONE)
            return
        verdict = ":white_check_mark: Approved" if decision == "approve" else ":x: Denied"
        closed = f"{ask.get('summary', '')}\n{verdict} by <@{user}>"
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": closed}}]
        container = payload.get("container") if isinstance(payload.get("container"), Mapping) else {}
        channel = (container or {}).get("channel_id") or (payload.get("channel") or {}).get("id")
        ts = (container or {}).get("message_ts") or (payload.get("message") or {}).get("ts")
        if isinstance(channel, str) and isinstance(ts, str):
            self.tasks.spawn(self._update(channel, ts, closed, blocks))

    async def _update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        try:
            await self.api.call("chat.update", {"channel": channel, "ts": ts, "text": text, "blocks": blocks})
        except SlackApiError as exc:
            log.warning("[slack] could not update approval message: %s", exc)

    def _ephemeral(self, response_url: Any, text: str) -> None:
        if isinstance(response_url, str) and response_url.startswith(("https://", "http://")):
            self.tasks.spawn(_respond(response_url, text))


async def _respond(url: str, text: str) -> None:
    body = {"response_type": "ephemeral", "replace_original": False, "text": text}
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            await client.post(url, json=body)
    except httpx.HTTPError as exc:
        log.warning("[slack] could not answer an interaction: %s", exc)
