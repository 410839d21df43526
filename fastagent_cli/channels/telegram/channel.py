"""The Telegram channel: ``POST /telegram`` -> routed update -> durable turn -> live answer.

::

    # channels/telegram.py
    from fastagent_cli.channels import telegram_channel

    channel = telegram_channel()   # TELEGRAM_BOT_TOKEN and TELEGRAM_SECRET_TOKEN from .env

Checks (feature M1): a method other than POST is ``405 "POST only\\n"``; a wrong or missing
``X-Telegram-Bot-Api-Secret-Token`` (constant time) is ``401 "invalid secret token\\n"``; a body over
1 MiB is ``413 "payload too large\\n"``; a body that is not a JSON object is ``400 "invalid json\\n"``.
Everything else is acknowledged ``200``, after what it causes is durable:

* an update without a fresh message (an edit, a callback) is dropped;
* a delivery already seen or pending (Telegram redelivers until it gets its 200) is dropped;
* ``/stop`` or ``/stop@<this bot>`` aborts the session's active run through ``ctx.control`` (the
  session hub; queued turns keep their place), answers ``⏹ Stopped.`` or ``Nothing is running.``,
  and never becomes a turn (``/stop@<another bot>`` is ignored);
* an unrouted group message joins the group's context buffer (persisted first: a failed write is a
  ``500`` and Telegram redelivers);
* a routed message becomes a turn intent in ``turns`` (persisted first, same rule), queued FIFO
  per session. A busy session gets ``⏳ Queued ...``, reply-quoted, which the turn later edits into
  its answer.

At start the channel loads its state, replays the turns a crash or a shutdown interrupted (in
arrival order; a turn interrupted 3 times is dropped and its asker told), and calls ``getMe`` once
for its username and to warn when privacy mode hides group messages. State lives in
``<state root>/channels/telegram/`` (``turns``, ``buffers``, ``seen``, ``files/``), or in the
shared database (``state_backend = "postgres"``): then every instance behind the webhook URL sees
the same turns, seen ring and buffers, and a turn accepted by an instance that stops is taken over
and run by another, once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from fastagent_cli.channels.kit.context_buffer import ContextBuffer
from fastagent_cli.channels.kit.home import open_channel_state, state_root_of
from fastagent_cli.channels.kit.invoke import ChannelFailure, default_error_message
from fastagent_cli.channels.kit.journal import StateWriteError
from fastagent_cli.channels.kit.routes import ChannelRoutes, secret_matches
from fastagent_cli.channels.kit.runtime import (
    BackgroundTasks,
    close_runtime,
    open_stores,
    recover_turns,
    session_queue,
)
from fastagent_cli.channels.kit.seen import SeenRing
from fastagent_cli.channels.kit.stop import dispatch_stop
from fastagent_cli.channels.kit.turn_store import TurnStore
from fastagent_cli.channels.telegram.api import (
    BOT_TOKEN_ENV,
    SECRET_TOKEN_ENV,
    BotApi,
    TelegramApiError,
)
from fastagent_cli.channels.telegram.intake import buffer_entry, buffer_line, reply_target, turn_record
from fastagent_cli.channels.telegram.parse import (
    TelegramRoute,
    bot_id_from_token,
    buffer_body,
    default_telegram_route,
    is_group,
    message_of,
    place_of,
)
from fastagent_cli.channels.telegram.runner import TurnRunner, is_turn, turn_order
from fastagent_cli.channels.telegram.webhook import register_telegram_webhook
from fastagent_cli.errors import ServeError, one_line
from fastagent_cli.serving.body import json_object_or_400, read_body_or_413, refuse_method, text_response
from fastagent_cli.state.channel_state import channel_home

__all__ = [
    "BOT_TOKEN_ENV",
    "SECRET_TOKEN_ENV",
    "TelegramChannel",
    "telegram_channel",
]

log = logging.getLogger("fastagent.channel")

KIND = "telegram"
ROUTE = "/telegram"
PRIVACY_WARNING = (
    "[telegram] privacy mode is on: the bot only sees @mentions, replies and commands in groups, so it "
    "cannot keep a group's context. Disable it via @BotFather → /setprivacy."
)
GET_ME_WAIT_S = 2.0
GET_ME_RETRY_S = 60.0
_STOP = re.compile(r"^/stop(?:@([A-Za-z0-9_]+))?$", re.IGNORECASE)

Route = Callable[[Mapping[str, Any]], Any]
"""``route(update) -> TelegramRoute | dict | None``."""
OnError = Callable[[ChannelFailure], "str | None"]


class TelegramChannel:
    """``channel(ctx)`` mounts ``/telegram``; ``register_webhook(url)`` calls ``setWebhook``."""

    kind = KIND

    def __init__(
        self,
        *,
        secret_token: str | None = None,
        bot_token: str | None = None,
        route: Route | None = None,
        on_error: OnError | None = None,
        bot_username: str | None = None,
        api_base_url: str | None = None,
    ) -> None:
        self.secret_token = secret_token
        self.bot_token = bot_token
        self.route = route
        self.on_error = on_error
        self.bot_username = bot_username
        self.api_base_url = api_base_url

    def _tokens(self) -> tuple[str, str]:
        secret = self.secret_token if self.secret_token is not None else os.environ.get(SECRET_TOKEN_ENV, "")
        token = self.bot_token if self.bot_token is not None else os.environ.get(BOT_TOKEN_ENV, "")
        return secret, token

    def __call__(self, ctx: Any) -> ChannelRoutes:
        secret, token = self._tokens()
        if not secret:
            raise ServeError(
                f"telegram_channel needs a secret token: set {SECRET_TOKEN_ENV} in .env (`fastagent add "
                "telegram` generates one; without it anyone could post updates)"
            )
        if not token:
            raise ServeError(
                f"telegram_channel needs the bot token: set {BOT_TOKEN_ENV} in .env (@BotFather -> /newbot)"
            )
        return _Bot(self, ctx, secret, token).routes()

    async def register_webhook(self, public_url: str) -> str:
        """Point the bot at ``<public_url>/telegram`` once that URL answers ``/health``."""
        secret, token = self._tokens()
        return await register_telegram_webhook(
            public_url, bot_token=token, secret_token=secret, api_base_url=self.api_base_url
        )


def telegram_channel(
    *,
    secret_token: str | None = None,
    bot_token: str | None = None,
    route: Route | None = None,
    on_error: OnError | None = None,
    bot_username: str | None = None,
    api_base_url: str | None = None,
) -> TelegramChannel:
    """The Telegram channel (see the module doc). Tokens default to ``TELEGRAM_SECRET_TOKEN`` and
    ``TELEGRAM_BOT_TOKEN``, read when the channel is mounted; ``route(update)`` decides whether and
    where to answer (default :func:`~fastagent_cli.channels.telegram.parse.default_telegram_route`);
    ``on_error(failure)`` is the text a user reads when a turn fails (``""``: say nothing);
    ``api_base_url`` (or ``TELEGRAM_API_BASE_URL``) points at another Bot API server."""
    return TelegramChannel(
        secret_token=secret_token,
        bot_token=bot_token,
        route=route,
        on_error=on_error,
        bot_username=bot_username,
        api_base_url=api_base_url,
    )


class _Bot:
    """One mounted Telegram channel."""

    def __init__(self, options: TelegramChannel, ctx: Any, secret: str, token: str) -> None:
        self.control = getattr(ctx, "control", None)
        self.secret = secret
        self.bot_id = bot_id_from_token(token)
        self.bot_username = options.bot_username
        self.route = options.route
        format_error: OnError = options.on_error or default_error_message
        files = channel_home(state_root_of(ctx), KIND) / "files"
        store = self.store = open_channel_state(ctx, KIND)
        self.turns = TurnStore(store, label="[telegram]", is_record=is_turn, order=turn_order)
        self.buffers = ContextBuffer(store, label="[telegram]", line=buffer_line)
        self.seen = SeenRing(store, label="[telegram]")
        self.api = BotApi(token, options.api_base_url)
        self.runner = TurnRunner(ctx.agent, self.api, self.turns, self.buffers, files, format_error)
        self.queue = session_queue(self.runner, "[telegram]")
        self._lookup: asyncio.Task[None] | None = None
        self._looked_up = float("-inf")
        self.tasks = BackgroundTasks()
        if self.bot_id is None:
            log.warning("[telegram] the bot token has no numeric bot id: reply-to-bot summons wait for getMe")

    def routes(self) -> ChannelRoutes:
        return ChannelRoutes({ROUTE: self.handle}, start=self.start, close=self.aclose)

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        await open_stores(KIND, (self.turns, self.buffers, self.seen))
        self._lookup = self.tasks.spawn(self._get_me())
        await asyncio.wait({self._lookup}, timeout=GET_ME_WAIT_S)
        pending = recover_turns(self.turns, "[telegram]")
        for record in pending:
            # The seen ring is written in the background: a kill can lose the id of a turn the
            # journal kept. Marking it again here stops a redelivery after the replay from
            # running the turn a second time.
            self.seen.add(record["id"])
            self.queue.accept(record)
        self.turns.watch_orphans(self.queue.accept)  # several instances: take over a stopped one's

    def _ask_identity_again(self) -> None:
        """No username yet (getMe failed at start): ask again, at most once a minute."""
        if self.bot_username is not None or (self._lookup is not None and not self._lookup.done()):
            return
        if time.monotonic() - self._looked_up >= GET_ME_RETRY_S:
            self._lookup = self.tasks.spawn(self._get_me())

    async def _get_me(self) -> None:
        self._looked_up = time.monotonic()
        try:
            me = await self.api.call("getMe")
        except TelegramApiError as exc:
            log.warning(
                "[telegram] getMe failed (%s): @mention summons need the bot's username; it is asked again "
                "when a group message arrives",
                exc,
            )
            return
        if not isinstance(me, dict):
            return
        if self.bot_username is None and isinstance(me.get("username"), str):
            self.bot_username = me["username"]
        if self.bot_id is None and isinstance(me.get("id"), int):
            self.bot_id = me["id"]
        if me.get("can_read_all_group_messages") is False:
            log.warning("%s", PRIVACY_WARNING)

    async def aclose(self) -> None:
        closables = (self.turns, self.buffers, self.seen, self.store, self.api)
        await close_runtime(self.queue, self.runner, self.tasks, closables)

    # --- the webhook ----------------------------------------------------------------------------

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        refused = refuse_method(request)
        if refused is not None:
            return refused
        if not secret_matches(request.headers.get("x-telegram-bot-api-secret-token"), self.secret):
            return text_response("invalid secret token\n", 401)
        raw = await read_body_or_413(request)
        if isinstance(raw, web.Response):
            return raw
        update = json_object_or_400(raw)
        if isinstance(update, web.Response):
            return update
        try:
            await asyncio.shield(self._accept(update))
        except StateWriteError as exc:
            log.error(
                "[telegram] could not persist update %s, so Telegram will deliver it again: %s",
                update.get("update_id"),
                exc,
            )
            return text_response("cannot persist the update\n", 500)
        return web.Response(status=200)

    async def _accept(self, update: dict[str, Any]) -> None:
        """Everything an update causes that must be durable before the 200."""
        message = message_of(update)
        if message is None:
            return
        update_id = update.get("update_id")
        delivery = str(update_id) if isinstance(update_id, int) else None
        if delivery is not None and delivery in self.seen:
            log.debug("[telegram] update %s was delivered before; ignored", delivery)
            return
        if is_group(message):
            self._ask_identity_again()
        route = self._decide(update)
        place = place_of(message)
        session = (route.session if route and route.session else None) or place
        stop = _STOP.match(str(message.get("text") or "").strip())
        if stop:
            addressed = stop.group(1)
            if addressed is None or (self.bot_username and addressed.lower() == self.bot_username.lower()):
                await self._stop(message, route, session)
            if delivery is not None:
                self.seen.add(delivery)
            return
        if route is None:
            if is_group(message) and buffer_body(message):
                await self.buffers.push(place, buffer_entry(message))
            if delivery is not None:
                self.seen.add(delivery)
            return
        record = turn_record(message, route, session, place, delivery)
        if record is None:
            return
        if await self.turns.add(record):
            if delivery is not None:
                self.seen.add(delivery)
            self.queue.accept(record)

    def _decide(self, update: Mapping[str, Any]) -> TelegramRoute | None:
        try:
            if self.route is None:
                return default_telegram_route(update, bot_username=self.bot_username, bot_id=self.bot_id)
            decided = self.route(update)
        except Exception as exc:
            log.error(
                "[telegram] route(update) raised, so update %s is dropped: %s",
                update.get("update_id"),
                _describe(exc),
            )
            return None
        if decided is None or isinstance(decided, TelegramRoute):
            return decided
        if isinstance(decided, Mapping):
            return TelegramRoute(**{k: decided.get(k) for k in ("session", "chat_id", "thread_id", "text")})
        log.error("[telegram] route(update) returned %r: return a TelegramRoute, a dict or None", decided)
        return None

    async def _stop(self, message: Mapping[str, Any], route: TelegramRoute | None, session: str) -> None:
        feedback = await dispatch_stop(self.control, session, "[telegram]")
        try:
            await self.api.send_message(reply_target(message, route), feedback, html=False)
        except TelegramApiError as exc:
            log.warning("[telegram] could not answer /stop: %s", exc)


def _describe(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}", 500)
