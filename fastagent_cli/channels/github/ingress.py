"""The GitHub webhook, ``POST /webhook``: a verified delivery -> the approval commands, else
``on(event)`` -> turns.

Checks, in order (features L2, L3): a method other than POST is ``405 "POST only\\n"``; a body over
25 MiB is ``413 "payload too large\\n"`` before anything is verified; a missing or wrong
``X-Hub-Signature-256`` (HMAC-SHA256 of the raw body with the secret, compared in constant time) is
``401 "invalid signature\\n"``; a ``ping`` is ``204``; a form body without ``payload`` is
``400 "missing form payload\\n"``; a payload that is not a JSON object is ``400 "invalid json\\n"``.
A verified delivery is answered ``202`` at once, ignored ones too, and its turns run in the
background with ids ``<delivery>#<i>`` (L5), one at a time per session in arrival order (the kit's
:class:`~fastagent_cli.channels.kit.turn_queue.TurnQueue`, as the chat channels queue theirs): a
turn for a session that is busy waits for it instead of failing. The queue is in memory: there is
no replay or dedup (L6), a redelivery runs again, an interrupted or queued turn is lost on a stop
and logged.

With a token (:mod:`.api`), tool approvals are asked and answered on the issue or pull request
(:mod:`.approvals`): an ``issue_comment`` ``created`` delivery holding ``/approve`` or ``/deny``
is answered in the background and never reaches ``on(event)``, and neither does a delivery of a
comment the channel posted itself (its first line is :data:`~.parse.MARKER`).
"""

from __future__ import annotations

import hmac
import inspect
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

from fastagent_cli.channels.github.api import GithubApi, resolve_api_url
from fastagent_cli.channels.github.approvals import GithubApprovals
from fastagent_cli.channels.github.parse import (
    KIND,
    MAX_WEBHOOK_BYTES,
    ROUTE,
    GithubEvent,
    Intent,
    On,
    is_own_comment,
    parse_command,
    sign_payload,
    thread_of,
)
from fastagent_cli.channels.github.runner import GithubRunner, Turn, describe
from fastagent_cli.channels.kit.approvals import ApprovalAsks
from fastagent_cli.channels.kit.home import open_channel_state
from fastagent_cli.channels.kit.routes import ChannelRoutes
from fastagent_cli.channels.kit.runtime import BackgroundTasks, open_stores
from fastagent_cli.channels.kit.trace import incoming_traceparent
from fastagent_cli.channels.kit.turn_queue import TurnQueue
from fastagent_cli.serving.body import json_object_or_400, read_post_body, text_response

__all__ = ["GithubIngress"]

log = logging.getLogger("fastagent.channel")

_FORM = "application/x-www-form-urlencoded"


class GithubIngress:
    """One mounted channel: the webhook, its turn queue and (with a token) its approvals."""

    def __init__(self, ctx: Any, secret: str, on: On, token: str, api_url: str | None) -> None:
        self.secret = secret
        self.on = on
        self.tasks = BackgroundTasks()
        self.approvals: GithubApprovals | None = None
        if token:
            self.store = open_channel_state(ctx, KIND)
            self.asks = ApprovalAsks(self.store, label="[github]")
            self.api = GithubApi(token, resolve_api_url(api_url))
            self.approvals = GithubApprovals(self.api, getattr(ctx, "control", None), self.asks)
        self.runner = GithubRunner(ctx.agent, self.approvals)
        self.queue: TurnQueue[Turn] = TurnQueue(
            self.runner.run,
            label="[github]",
            session_of=lambda turn: turn.intent.session,
            on_queued_behind=self.runner.queued,
        )

    def routes(self) -> ChannelRoutes:
        return ChannelRoutes({ROUTE: self.handle}, start=self.start, close=self.aclose)

    async def start(self) -> None:
        if self.approvals is None:
            log.info(
                "[github] no GITHUB_TOKEN: tool approvals are answered on the control plane or the "
                "web chat, not on GitHub"
            )
            return
        await open_stores(KIND, [self.asks])

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raw = await read_post_body(request, MAX_WEBHOOK_BYTES)
        if isinstance(raw, web.Response):
            return raw
        signature = request.headers.get("x-hub-signature-256", "")
        if not hmac.compare_digest(
            signature.encode("latin-1", "replace"), sign_payload(self.secret, raw).encode()
        ):
            return text_response("invalid signature\n", 401)
        name = request.headers.get("x-github-event", "")
        if name == "ping":
            return web.Response(status=204)
        body = raw
        if request.content_type == _FORM:
            fields = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
            if "payload" not in fields:
                return text_response("missing form payload\n", 400)
            body = fields["payload"][0].encode("utf-8")
        payload = json_object_or_400(body)
        if isinstance(payload, web.Response):
            return payload
        action = payload.get("action")
        event = GithubEvent(
            name,
            action if isinstance(action, str) else None,
            request.headers.get("x-github-delivery", ""),
            payload,
        )
        if self._answered(event):
            return web.Response(status=202)
        try:
            intents = await _intents(self.on, event)
        except Exception as exc:
            log.error("[github] on(event) raised for delivery %s: %s", event.delivery_id, describe(exc))
            return text_response("on(event) failed\n", 500)
        label = f"{event.event}.{event.action}" if event.action else event.event
        trace = incoming_traceparent(request.headers)
        thread = thread_of(payload)
        sender = payload.get("sender")
        login = sender.get("login") if isinstance(sender, Mapping) else None
        for index, intent in enumerate(intents):
            turn_id = f"{event.delivery_id}#{index}"
            self.queue.accept(
                Turn(turn_id, intent, label, trace, thread, login if isinstance(login, str) else None)
            )
        return web.Response(status=202)

    def _answered(self, event: GithubEvent) -> bool:
        """Is the delivery the channel's own (a comment it posted, or an approval command)? Then
        ``on(event)`` never sees it; a command is answered in the background."""
        if self.approvals is None or event.event != "issue_comment":
            return False
        if is_own_comment(event.payload):
            log.debug("[github] delivery %s is a comment of the channel's own: ignored", event.delivery_id)
            return True
        if event.action != "created":
            return False
        comment = event.payload.get("comment")
        command = parse_command(comment.get("body") if isinstance(comment, Mapping) else None)
        if command is None:
            return False
        self.tasks.spawn(self.approvals.command(event.payload, command))
        return True

    async def aclose(self) -> None:
        await self.queue.aclose()
        await self.tasks.cancel()
        if self.approvals is not None:
            await self.asks.aclose()
            await self.store.aclose()
            await self.api.aclose()


async def _intents(on: On, event: GithubEvent) -> list[Intent]:
    result = on(event)
    if inspect.isawaitable(result):
        result = await result
    if result is None:
        return []
    intents: list[Intent] = []
    for item in result:
        if isinstance(item, Intent):
            intents.append(item)
        elif (
            isinstance(item, Mapping)
            and isinstance(item.get("session"), str)
            and isinstance(item.get("text"), str)
        ):
            intents.append(Intent(item["session"], item["text"]))
        else:
            raise TypeError(f"on(event) returned {item!r}, not an Intent(session, text)")
    for intent in intents:
        if not intent.session or not isinstance(intent.session, str) or not isinstance(intent.text, str):
            raise TypeError(f"on(event) returned {intent!r}: session and text must be non-empty strings")
    return intents
