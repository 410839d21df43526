"""The GitHub webhook channel: ``POST /webhook`` -> verified delivery -> ``on(event)`` -> turns.

::

    # channels/github.py
    from fastagent_cli.channels import Intent, github_channel

    def on(event):
        if event.event == "pull_request" and event.action == "opened":
            pr = event.payload["pull_request"]
            return [Intent(session=event.delivery_id, text=f"Review PR #{pr['number']}.")]
        return []

    channel = github_channel(on=on)

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

The secret is ``secret=`` or ``GITHUB_WEBHOOK_SECRET``, read when the channel is mounted; an empty
one is an error then (importing the file needs no secret, so ``deploy`` can inspect it).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import inspect
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

from fastagent_cli import telemetry
from fastagent_cli.channels.kit.routes import ChannelRoutes
from fastagent_cli.channels.kit.trace import incoming_traceparent
from fastagent_cli.channels.kit.turn_queue import TurnQueue
from fastagent_cli.contract import AgentFailure, Prompt, Scope, collect
from fastagent_cli.errors import ServeError, one_line
from fastagent_cli.serving.body import json_object_or_400, read_post_body, text_response

__all__ = [
    "GITHUB_SECRET_ENV",
    "MAX_WEBHOOK_BYTES",
    "GithubChannel",
    "GithubEvent",
    "Intent",
    "github_channel",
    "sign_payload",
]

log = logging.getLogger("fastagent.channel")

GITHUB_SECRET_ENV = "GITHUB_WEBHOOK_SECRET"
MAX_WEBHOOK_BYTES = 25 << 20
ROUTE = "/webhook"
_FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True, slots=True)
class GithubEvent:
    """A verified delivery."""

    event: str
    """``X-GitHub-Event`` (``pull_request``, ``issue_comment``...)."""
    action: str | None
    """``payload["action"]`` when there is one (``opened``...)."""
    delivery_id: str
    """``X-GitHub-Delivery``: unique per delivery (a redelivery keeps it)."""
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Intent:
    """One turn to run: a session and the prompt text."""

    session: str
    text: str


On = Callable[[GithubEvent], Any]
"""``on(event) -> [Intent, ...]`` (or an awaitable of it; an intent may also be a mapping)."""


def sign_payload(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


class GithubChannel:
    """``channel(ctx)`` mounts ``/webhook``; ``register_webhook(url)`` prints the Payload URL."""

    kind = "github"

    def __init__(self, on: On, secret: str | None = None) -> None:
        if not callable(on):
            raise TypeError("github_channel(on=...) needs a function event -> [Intent(session, text)]")
        self.on = on
        self.secret = secret

    def __call__(self, ctx: Any) -> ChannelRoutes:
        secret = self.secret if self.secret is not None else os.environ.get(GITHUB_SECRET_ENV, "")
        if not secret:
            raise ServeError(
                f"github_channel needs a webhook secret: set {GITHUB_SECRET_ENV} in .env (an empty secret "
                "would accept forged deliveries)"
            )
        return _Mounted(ctx.agent, secret, self.on).routes()

    def register_webhook(self, public_url: str) -> str:
        """GitHub webhooks are set by a person: print what to paste; the outcome is ``manual``."""
        log.info(
            "[github] set the repository webhook (Settings -> Webhooks -> Add webhook): Payload URL %s%s, "
            "content type application/json, secret: the value of %s",
            public_url.rstrip("/"),
            ROUTE,
            GITHUB_SECRET_ENV,
        )
        return "manual"


def github_channel(*, on: On, secret: str | None = None) -> GithubChannel:
    """The GitHub channel (see the module doc). ``secret`` defaults to ``GITHUB_WEBHOOK_SECRET``."""
    return GithubChannel(on, secret)


class _Mounted:
    def __init__(self, agent: Any, secret: str, on: On) -> None:
        self.agent = agent
        self.secret = secret
        self.on = on
        self.queue: TurnQueue[_Turn] = TurnQueue(
            self._run, label="[github]", session_of=lambda turn: turn.intent.session, on_queued_behind=_queued
        )

    def routes(self) -> ChannelRoutes:
        return ChannelRoutes({ROUTE: self.handle}, close=self.aclose)

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
        try:
            intents = await _intents(self.on, event)
        except Exception as exc:
            log.error("[github] on(event) raised for delivery %s: %s", event.delivery_id, _describe(exc))
            return text_response("on(event) failed\n", 500)
        label = f"{event.event}.{event.action}" if event.action else event.event
        trace = incoming_traceparent(request.headers)
        for index, intent in enumerate(intents):
            self.queue.accept(_Turn(f"{event.delivery_id}#{index}", intent, label, trace))
        return web.Response(status=202)

    async def _run(self, item: _Turn) -> None:
        turn, intent = item.id, item.intent
        log.info("[github] turn start: turn=%s session=%s event=%s", turn, intent.session, item.event)
        started = time.monotonic()
        try:
            with telemetry.root_span(
                "github turn",
                trigger="channel",
                traceparent=item.traceparent,
                kind=telemetry.CONSUMER,
                attributes={"fastagent.channel": "github", "gen_ai.conversation.id": intent.session},
            ):
                await collect(self.agent.invoke(Scope(intent.session), Prompt(intent.text)))
        except asyncio.CancelledError:
            log.warning("[github] turn interrupted: turn=%s session=%s (not replayed)", turn, intent.session)
            raise
        except AgentFailure as exc:
            log.error(
                "[github] turn failed: turn=%s session=%s (%dms): %s",
                turn,
                intent.session,
                _ms(started),
                one_line(exc.details, 500),
            )
        except Exception as exc:
            log.error(
                "[github] turn failed: turn=%s session=%s (%dms): %s",
                turn,
                intent.session,
                _ms(started),
                _describe(exc),
            )
        else:
            log.info("[github] turn done: turn=%s session=%s (%dms)", turn, intent.session, _ms(started))

    async def aclose(self) -> None:
        await self.queue.aclose()


@dataclass(frozen=True, slots=True)
class _Turn:
    id: str
    intent: Intent
    event: str
    traceparent: str | None
    """The delivery's W3C trace context (telemetry on): the turn's root span continues it."""


def _queued(turn: _Turn) -> None:
    log.info(
        "[github] turn queued: turn=%s session=%s (behind the session's running turn)",
        turn.id,
        turn.intent.session,
    )


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


def _describe(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}", 500)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
