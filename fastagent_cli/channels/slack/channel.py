"""The Slack channel: ``POST /slack`` (HTTP Events API) -> durable turn -> a threaded answer.

::

    # channels/slack.py
    from fastagent_cli.channels import slack_channel

    channel = slack_channel(group_behavior="context")   # SLACK_* from .env

Checks, in order (features N1, N2): a method other than POST is ``405 "POST only\\n"``; a body over
1 MiB is ``413 "payload too large\\n"``; a missing, stale (over 5 minutes) or wrong ``v0`` signature
is ``401 "invalid signature\\n"``; a body that is not a JSON object is ``400 "invalid json\\n"``;
``url_verification`` answers ``{"challenge": ...}``; any type but ``event_callback`` is ``200``; when
the bot token does not work (``auth.test`` failed) the answer is ``503 "slack authentication
unavailable\\n"`` so Slack delivers again later. Everything else is ``200`` once what it causes is
durable (a failed write is a ``500``: Slack retries, with ``X-Slack-Retry-Num``):

* a message already seen or pending (Slack's retries; ``app_mention`` and ``message.*`` for the same
  message) is dropped: identity is ``(team, channel, ts)``;
* a DM and an ``app_mention`` are turns; in ``group_behavior="context"`` a bare reply in a thread
  where the agent answered and heard at most one human is a turn too (the participant rule), and
  any other human message in a channel joins the place's context buffer;
* a whole-message ``stop`` / ``cancel`` aborts the session's active run (``ctx.control``);
* the session is ``slack:<team>:<channel>:<thread root ts>`` and the answer goes in that thread;
* ``app_home_opened`` on the Messages tab sends a one-time welcome (``welcomed``).

State lives in ``<state root>/channels/slack/`` (``turns``, ``seen``, ``buffers``,
``thread-participants``, ``welcomed``, ``bot-auth``, ``files/``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from fastagent_cli.channels.kit.context_buffer import ContextBuffer
from fastagent_cli.channels.kit.home import open_channel_state, state_root_of
from fastagent_cli.channels.kit.invoke import ChannelFailure, default_error_message, truncate
from fastagent_cli.channels.kit.journal import StateWriteError
from fastagent_cli.channels.kit.participants import ThreadParticipants
from fastagent_cli.channels.kit.routes import ChannelRoutes
from fastagent_cli.channels.kit.runtime import (
    BackgroundTasks,
    close_runtime,
    last_seq,
    open_stores,
    recover_turns,
    session_queue,
)
from fastagent_cli.channels.kit.seen import SeenRing
from fastagent_cli.channels.kit.stop import dispatch_stop, is_stop_text
from fastagent_cli.channels.kit.turn_store import TurnRecord, TurnStore
from fastagent_cli.channels.slack.api import SlackApi, SlackApiError, SlackTarget, resolve_api_base
from fastagent_cli.channels.slack.bot_auth import BotToken
from fastagent_cli.channels.slack.parse import (
    SlackRoute,
    buffer_line,
    default_slack_route,
    file_ids,
    has_mention,
    has_user_mention,
    is_direct,
    is_group,
    is_human_message,
    mentions_user,
    message_text,
    place_key,
    slack_envelope,
    strip_mentions,
    team_id_of,
)
from fastagent_cli.channels.slack.runner import SlackRunner, is_turn
from fastagent_cli.channels.slack.verify import verify_slack_signature
from fastagent_cli.errors import ServeError, one_line
from fastagent_cli.serving.body import MAX_BODY_BYTES, read_body_capped, text_response
from fastagent_cli.state.channel_state import channel_home

__all__ = ["DEFAULT_WELCOME", "ENV", "SlackChannel", "slack_channel"]

log = logging.getLogger("fastagent.channel")

KIND = "slack"
ROUTE = "/slack"
DEFAULT_WELCOME = (
    "👋 Hi! I'm an AI agent here to help. Ask a question or describe a task and I'll get to work."
)
AUTH_WAIT_S = 2.0
AUTH_RETRY_S = 60.0
ENV = {
    "bot_token": "SLACK_BOT_TOKEN",
    "signing_secret": "SLACK_SIGNING_SECRET",
    "bot_refresh_token": "SLACK_BOT_REFRESH_TOKEN",
    "client_id": "SLACK_CLIENT_ID",
    "client_secret": "SLACK_CLIENT_SECRET",
    "bot_token_expires_at": "SLACK_BOT_TOKEN_EXPIRES_AT",
}

Route = Callable[[Mapping[str, Any]], Any]
OnError = Callable[[ChannelFailure], "str | None"]


class _Welcomed(SeenRing):
    """Users who got the one-time DM welcome (``team:user``)."""

    name = "welcomed"


class SlackChannel:
    """``channel(ctx)`` mounts ``/slack``; ``register_webhook(url)`` updates an onboarded app's
    Request URL through ``apps.manifest.update`` (else prints the URL to set)."""

    kind = KIND

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.agent_file: str | None = options.pop("_agent_file", None)
        self.state_root: Path | None = None

    def _setting(self, name: str) -> str:
        value = self.options.get(name)
        return str(value) if value is not None else os.environ.get(ENV[name], "")

    def __call__(self, ctx: Any) -> ChannelRoutes:
        bot_token, secret = self._setting("bot_token"), self._setting("signing_secret")
        if not bot_token:
            raise ServeError("slack_channel needs the bot token: set SLACK_BOT_TOKEN in .env (xoxb-...)")
        if not secret:
            raise ServeError(
                "slack_channel needs the signing secret: set SLACK_SIGNING_SECRET in .env "
                "(Basic Information -> App Credentials)"
            )
        self.state_root = state_root_of(ctx)
        return _Slack(self, ctx, bot_token, secret).routes()

    async def register_webhook(self, public_url: str) -> str:
        from fastagent_cli.channels.slack.onboard import register_request_url

        return await register_request_url(public_url, self._state_root_for_registration(), self.options)

    def _state_root_for_registration(self) -> Path | None:
        if self.state_root is not None:
            return self.state_root
        if self.agent_file is None:
            return None
        from fastagent_cli.state.paths import resolve_state_root

        try:
            return resolve_state_root(Path(self.agent_file).resolve().parent.parent)
        except Exception:
            return None


def slack_channel(
    *,
    bot_token: str | None = None,
    signing_secret: str | None = None,
    bot_refresh_token: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    bot_token_expires_at: int | None = None,
    group_behavior: str = "context",
    rendering: str = "native",
    ai_disclaimer: str | None = None,
    welcome: str | bool = True,
    reaction_ack: bool | tuple[str, str] = True,
    route: Route | None = None,
    on_error: OnError | None = None,
    api_base_url: str | None = None,
    direct_message_session: Any = None,
    group_message_session: Any = None,
) -> SlackChannel:
    """The Slack channel (see the module doc). Credentials default to the ``SLACK_*`` variables, read
    when the channel is mounted. ``group_behavior``: ``"context"`` (bare replies in threads the agent
    takes part in, and buffered discussion) or ``"mentions"`` (DMs and @mentions only).
    ``rendering``: ``"native"`` (Agent streams) or ``"classic"`` (one edited message).
    ``welcome``: the first-DM greeting (``False``: none). ``reaction_ack``: 👀 then ✅ on the asking
    message (``False``: none; or ``(processing, completed)`` emoji names). ``route(envelope)``
    returns a :class:`SlackRoute`, a dict or ``None`` and replaces the default policy entirely.
    ``api_base_url`` (or ``SLACK_API_BASE_URL``) points at another Web API server."""
    removed = [
        name
        for name, value in (
            ("direct_message_session", direct_message_session),
            ("group_message_session", group_message_session),
        )
        if value is not None
    ]
    if removed:
        raise ServeError(
            f"slack_channel no longer accepts {' / '.join(removed)}: an answer goes in a thread on the ask, "
            "and that thread is the session; remove the option"
        )
    if group_behavior not in ("context", "mentions"):
        raise ServeError(
            f'slack_channel group_behavior must be "context" or "mentions", not {group_behavior!r}'
        )
    if rendering not in ("native", "classic"):
        raise ServeError(f'slack_channel rendering must be "native" or "classic", not {rendering!r}')
    caller = sys._getframe(1).f_globals.get("__file__")
    return SlackChannel(
        bot_token=bot_token,
        signing_secret=signing_secret,
        bot_refresh_token=bot_refresh_token,
        client_id=client_id,
        client_secret=client_secret,
        bot_token_expires_at=bot_token_expires_at,
        group_behavior=group_behavior,
        rendering=rendering,
        ai_disclaimer=ai_disclaimer,
        welcome=welcome,
        reaction_ack=reaction_ack,
        route=route,
        on_error=on_error,
        api_base_url=api_base_url,
        _agent_file=caller if isinstance(caller, str) else None,
    )


def _expires_at(value: str) -> int | None:
    if not value:
        return None
    try:
        return int(float(value))
    except ValueError:
        raise ServeError(f"SLACK_BOT_TOKEN_EXPIRES_AT must be epoch milliseconds, not {value!r}") from None


class _Slack:
    """One mounted Slack channel."""

    def __init__(self, options: SlackChannel, ctx: Any, bot_token: str, secret: str) -> None:
        o = options.options
        self.control = getattr(ctx, "control", None)
        self.secret = secret
        self.route = o.get("route")
        self.context_mode = o.get("group_behavior", "context") == "context"
        welcome = o.get("welcome", True)
        self.welcome = DEFAULT_WELCOME if welcome is True else (welcome or None)
        ack = o.get("reaction_ack", True)
        reactions = ("eyes", "white_check_mark") if ack is True else (tuple(ack) if ack else None)
        api_base = resolve_api_base(o.get("api_base_url"))
        store = self.store = open_channel_state(ctx, KIND)
        self.token = BotToken(
            store,
            bot_token=bot_token,
            refresh_token=options._setting("bot_refresh_token") or None,
            client_id=options._setting("client_id") or None,
            client_secret=options._setting("client_secret") or None,
            expires_at=_expires_at(options._setting("bot_token_expires_at")),
            api_base=api_base,
        )
        self.api = SlackApi(self.token, api_base)
        self.turns = TurnStore(store, label="[slack]", is_record=is_turn, order=lambda r: r.get("seq", 0))
        self.buffers = ContextBuffer(store, label="[slack]", line=buffer_line)
        self.seen = SeenRing(store, label="[slack]")
        self.participants = ThreadParticipants(store, label="[slack]")
        self.welcomed = _Welcomed(store, label="[slack]", capacity=100_000)
        self.runner = SlackRunner(
            ctx.agent,
            self.api,
            self.turns,
            self.buffers,
            channel_home(state_root_of(ctx), KIND) / "files",
            o.get("on_error") or default_error_message,
            rendering=o.get("rendering", "native"),
            disclaimer=o.get("ai_disclaimer"),
            reactions=reactions,
            ready=self._authenticated,
        )
        self.queue = session_queue(self.runner, "[slack]")
        self.team: str | None = None
        self.bot_user: str | None = None
        self.auth: asyncio.Task[bool] | None = None
        self.auth_at = float("-inf")
        self.seq = 0
        self.tasks = BackgroundTasks()
        self.welcoming: set[str] = set()

    def routes(self) -> ChannelRoutes:
        return ChannelRoutes({ROUTE: self.handle}, start=self.start, close=self.aclose)

    @property
    def stores(self) -> tuple[Any, ...]:
        return (self.turns, self.buffers, self.seen, self.participants, self.welcomed)

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        await open_stores(KIND, (self.token, *self.stores))
        self.auth = self.tasks.spawn(self._auth_test())
        await asyncio.wait({self.auth}, timeout=AUTH_WAIT_S)
        pending = recover_turns(self.turns, "[slack]")
        self.seq = last_seq(pending)
        for record in pending:
            self.queue.accept(record)

    async def _auth_test(self) -> bool:
        self.auth_at = time.monotonic()
        try:
            me = await self.api.auth_test()
        except (SlackApiError, RuntimeError) as exc:
            log.error("[slack] auth.test failed — fix SLACK_BOT_TOKEN before events are accepted: %s", exc)
            return False
        self.team = me.get("team_id") if isinstance(me.get("team_id"), str) else None
        self.bot_user = me.get("user_id") if isinstance(me.get("user_id"), str) else None
        log.info("[slack] authenticated%s", f" for workspace {self.team}" if self.team else "")
        return True

    async def _authenticated(self) -> bool:
        auth = self.auth
        if auth is None:
            return False
        if auth.done() and not auth.result() and time.monotonic() - self.auth_at >= AUTH_RETRY_S:
            auth = self.auth = self.tasks.spawn(self._auth_test())
        try:
            return await asyncio.wait_for(asyncio.shield(auth), AUTH_WAIT_S)
        except TimeoutError:
            return False

    async def aclose(self) -> None:
        closables = (*self.stores, self.token.document, self.store, self.api)
        await close_runtime(self.queue, self.runner, self.tasks, closables)

    # --- the webhook ----------------------------------------------------------------------------

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.method != "POST":
            return text_response("POST only\n", 405)
        raw = await read_body_capped(request, MAX_BODY_BYTES)
        if raw is None:
            return text_response("payload too large\n", 413)
        headers = request.headers
        if not verify_slack_signature(
            self.secret, headers.get("x-slack-request-timestamp"), headers.get("x-slack-signature"), raw
        ):
            log.warning("[slack] rejected an event with an invalid or stale X-Slack-Signature")
            return text_response("invalid signature\n", 401)
        try:
            envelope = json.loads(raw)
        except ValueError:
            return text_response("invalid json\n", 400)
        if not isinstance(envelope, dict):
            return text_response("invalid json\n", 400)
        if envelope.get("type") == "url_verification" and isinstance(envelope.get("challenge"), str):
            return web.json_response({"challenge": envelope["challenge"]})
        if envelope.get("type") != "event_callback":
            return web.Response(status=200)
        retry = headers.get("x-slack-retry-num")
        if retry:
            log.info(
                "[slack] Slack retry %s of event %s (%s)",
                retry,
                envelope.get("event_id"),
                headers.get("x-slack-retry-reason", "unknown reason"),
            )
        if not await self._authenticated():
            log.error(
                "[slack] refusing to acknowledge event %s: authentication is unavailable",
                envelope.get("event_id"),
            )
            return text_response("slack authentication unavailable\n", 503)
        try:
            await asyncio.shield(self._accept(envelope))
        except StateWriteError as exc:
            log.error(
                "[slack] could not persist event %s, so Slack will deliver it again: %s",
                envelope.get("event_id"),
                exc,
            )
            return text_response("cannot persist the event\n", 500)
        return web.Response(status=200)

    def _thread_key(self, team: str, channel: str, ts: str) -> str:
        return f"slack:{team}:{channel}:{ts}"

    async def _accept(self, envelope: dict[str, Any]) -> None:
        event = envelope.get("event")
        if not isinstance(event, dict):
            return
        team = team_id_of(envelope) or self.team
        if event.get("type") == "app_home_opened":
            self._maybe_welcome(event, team)
            return
        if not is_human_message(event) or (self.bot_user and event.get("user") == self.bot_user):
            return
        if not team:
            log.warning("[slack] ignored message %s: the event names no workspace", event.get("ts"))
            return
        channel, ts, user = str(event["channel"]), str(event["ts"]), str(event["user"])
        thread_ts = event.get("thread_ts") if isinstance(event.get("thread_ts"), str) else None
        logical = f"{team}:{channel}:{ts}"
        if logical in self.seen or self.turns.pending(logical):
            log.debug("[slack] message %s was delivered before; ignored", logical)
            return
        group, direct = is_group(event), is_direct(event)
        text = str(event.get("text") or "")
        if group and thread_ts:
            self.participants.merge(self._thread_key(team, channel, thread_ts), humans=[user])
        route = self._decide(envelope)
        custom = self.route is not None
        if route is None and not custom and group and event.get("type") == "message":
            if self.bot_user and mentions_user(text, self.bot_user):
                route = SlackRoute()  # message.* arrived before its app_mention
            elif (
                self.context_mode
                and thread_ts
                and not has_mention(text)
                and self.participants.admits_bare_message(self._thread_key(team, channel, thread_ts))
            ):
                route = SlackRoute()
        if route is None:
            if not custom and group and self.bot_user is None and has_user_mention(text):
                return  # who the bot is is unknown yet: wait for the app_mention delivery
            if self.context_mode and not custom and group:
                body = message_text(event)
                if body.strip():
                    entry = {"sender": f"user {user}", "body": body, "msg": ts, "reply": thread_ts}
                    if file_ids(event):
                        entry["files"] = file_ids(event)
                    await self.buffers.push(place_key(team, event), entry)
                    self.seen.add(logical)
            return
        target_channel = route.channel_id or channel
        same = target_channel == channel
        thread = None if route.top_level else (route.thread_ts or ((thread_ts or ts) if same else None))
        session = route.session or self._thread_key(team, channel, thread_ts or ts)
        if is_stop_text(strip_mentions(text)):
            self.seen.add(logical)
            self.tasks.spawn(self._stop(session, SlackTarget(channel, thread_ts or ts)))
            return
        files = file_ids(event)
        prompt = route.text if route.text is not None else slack_envelope(envelope)
        if not prompt.strip() and not files:
            return
        title = None
        if direct and not thread_ts:
            title = truncate(" ".join(strip_mentions(message_text(event), "").split()), 80) or None
        self.seq += 1
        record: TurnRecord = {
            "id": logical,
            "seq": self.seq,
            "session": session,
            "text": prompt,
            "place": place_key(team, event),
            "team": team,
            "channel": target_channel,
            "thread": thread,
            "user": user,
            "title": title,
            "files": files,
            "attempts": 0,
        }
        if await self.turns.add(record):
            self.seen.add(logical)
            self.queue.accept(record)
        if group and thread and same and route.session is None and route.thread_ts is None:
            self.participants.merge(self._thread_key(team, channel, thread), humans=[user], agent_spoke=True)

    def _decide(self, envelope: Mapping[str, Any]) -> SlackRoute | None:
        try:
            if self.route is None:
                return default_slack_route(envelope)
            decided = self.route(envelope)
        except Exception as exc:
            log.error(
                "[slack] route(envelope) raised, so the event is dropped: %s",
                one_line(f"{type(exc).__name__}: {exc}", 500),
            )
            return None
        if decided is None or isinstance(decided, SlackRoute):
            return decided
        if isinstance(decided, Mapping):
            fields = ("session", "channel_id", "thread_ts", "text")
            return SlackRoute(**{k: decided.get(k) for k in fields}, top_level=bool(decided.get("top_level")))
        log.error("[slack] route(envelope) returned %r: return a SlackRoute, a dict or None", decided)
        return None

    async def _stop(self, session: str, target: SlackTarget) -> None:
        feedback = await dispatch_stop(self.control, session, "[slack]")
        try:
            await self.api.post(target, text=feedback)
        except SlackApiError as exc:
            log.warning("[slack] could not answer the stop command: %s", exc)

    def _maybe_welcome(self, event: Mapping[str, Any], team: str | None) -> None:
        if not self.welcome or event.get("tab") != "messages" or not team:
            return
        user, channel = event.get("user"), event.get("channel")
        if not isinstance(user, str) or not isinstance(channel, str):
            return
        key = f"{team}:{user}"
        if key in self.welcomed or key in self.welcoming:
            return
        self.welcoming.add(key)
        self.tasks.spawn(self._welcome(key, channel))

    async def _welcome(self, key: str, channel: str) -> None:
        try:
            await self.api.post(SlackTarget(channel), markdown=str(self.welcome))
            self.welcomed.add(key)
            log.info("[slack] sent the first-run welcome to %s", key)
        except SlackApiError as exc:
            log.warning("[slack] could not send the first-run welcome (retried on the next open): %s", exc)
        finally:
            self.welcoming.discard(key)
