"""The Feishu and Lark channels: a verified event -> durable turn -> a streaming card.

::

    # channels/feishu.py (webhook: POST /feishu)      # or WebSocket: no public URL needed
    from fastagent_cli.channels import feishu_channel  # feishu_websocket_channel
    channel = feishu_channel()                         # FEISHU_* from .env (LARK_* for lark_channel)

Webhook checks, in order (features O3-O5): non-POST ``405 "POST only\\n"``; over 1 MiB ``413
"payload too large\\n"``; not a JSON object ``400 "invalid json\\n"``; an ``{"encrypt": ...}`` body
without an Encrypt Key ``400 "encrypt key not configured\\n"``; a wrong ``X-Lark-Signature`` ``401
"invalid signature\\n"`` (an unsigned encrypted body is accepted only for ``url_verification``); a
body that does not decrypt ``400 "invalid encrypted payload\\n"``; a plaintext body while a key is set
``401 "plaintext events not accepted\\n"``; a wrong verification token ``401 "invalid token\\n"``.
``url_verification`` answers ``{"challenge": ...}``; only ``im.message.receive_v1`` is consumed
(others ``200``); a turn or buffered message is persisted, then ``200`` (a failed write is ``500``
and the platform pushes again). The WebSocket ingress (:mod:`~fastagent_cli.channels.feishu.ws`)
feeds the same acceptance and answers a failed write with a ``500`` frame.

Routing (O9): a direct message always; in a group an @mention of the bot (by its ``open_id``, from
``bot/v3/info``, cached in ``bot``; fail-closed until known); a bare message in a thread the agent
owns while it has heard at most one human there; other human group messages join the place's
context buffer; non-user senders never act. Sessions (seed): threaded roots by default, each
top-level ask ``<kind>:<message_id>`` answered with ``reply_in_thread``, continuations mapped back
(``owned-threads``), a new thread starting from its room; ``direct_message_session="continuous"`` /
``group_message_session="continuous"`` restore ``<kind>:<chat_id>`` and ``<kind>:<chat_id>:<thread_id>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from fastagent_cli.channels.feishu.api import FeishuApi, FeishuApiError, FeishuTarget
from fastagent_cli.channels.feishu.cloud import FEISHU, LARK, Cloud
from fastagent_cli.channels.feishu.crypto import DecryptError, decrypt_event, secrets_match, verify_signature
from fastagent_cli.channels.feishu.owned import OwnedThreads
from fastagent_cli.channels.feishu.parse import (
    FeishuRoute,
    buffer_line,
    decode_content,
    default_feishu_route,
    feishu_envelope,
    sender_id,
)
from fastagent_cli.channels.feishu.preview import Mounted
from fastagent_cli.channels.feishu.runner import FeishuRunner, is_turn
from fastagent_cli.channels.kit.context_buffer import ContextBuffer
from fastagent_cli.channels.kit.document import StateDocument
from fastagent_cli.channels.kit.home import open_channel_state, state_root_of
from fastagent_cli.channels.kit.invoke import ChannelFailure, default_error_message
from fastagent_cli.channels.kit.journal import StateWriteError
from fastagent_cli.channels.kit.participants import ThreadParticipants
from fastagent_cli.channels.kit.routes import ChannelRoutes
from fastagent_cli.channels.kit.seen import SeenRing
from fastagent_cli.channels.kit.stop import dispatch_stop, is_stop_text
from fastagent_cli.channels.kit.turn_queue import TurnQueue
from fastagent_cli.channels.kit.turn_store import TurnRecord, TurnStore
from fastagent_cli.errors import ServeError, one_line
from fastagent_cli.serving.body import MAX_BODY_BYTES, read_body_capped, text_response
from fastagent_cli.state.channel_state import channel_home

__all__ = [
    "GROUP_CONTEXT_SCOPE",
    "FeishuChannel",
    "FeishuWebSocketChannel",
    "feishu_channel",
    "feishu_websocket_channel",
    "lark_channel",
    "lark_websocket_channel",
]

log = logging.getLogger("fastagent.channel")

GROUP_CONTEXT_SCOPE = "im:message.group_msg"
BOT_INFO_WAIT_S = 2.0
Route = Callable[[Mapping[str, Any]], Any]
OnError = Callable[[ChannelFailure], "str | None"]
_MODES = ("threaded", "continuous")


class _Runtime:
    """The acceptance boundary and the turn engine of one mounted Feishu/Lark channel."""

    def __init__(self, cloud: Cloud, options: dict[str, Any], ctx: Any, app_id: str, app_secret: str) -> None:
        self.cloud = cloud
        self.label = cloud.label
        self.kind = cloud.kind
        self.app_id = app_id
        self.route = options.get("route")
        self.modes = {
            "p2p": options.get("direct_message_session") or "threaded",
            "group": options.get("group_message_session") or "threaded",
        }
        self.control = getattr(ctx, "control", None)
        self.api = FeishuApi(
            cloud.kind, cloud.resolve_api_base(options.get("api_base_url")), app_id, app_secret
        )
        store = self.store = open_channel_state(ctx, cloud.kind)
        self.turns = TurnStore(store, label=self.label, is_record=is_turn, order=lambda r: r.get("seq", 0))
        self.buffers = ContextBuffer(store, label=self.label, line=buffer_line)
        self.seen = SeenRing(store, label=self.label)
        self.participants = ThreadParticipants(store, label=self.label)
        self.owned = OwnedThreads(store, label=self.label)
        self.bot = StateDocument(
            store,
            "bot",
            label=self.label,
            check=lambda v: isinstance(v, dict) and isinstance(v.get("appId"), str),
        )
        self.runner = FeishuRunner(
            ctx.agent,
            self.api,
            self.turns,
            self.buffers,
            channel_home(state_root_of(ctx), cloud.kind) / "files",
            options.get("on_error") or default_error_message,
            label=self.label,
            on_answered=self._answered,
        )
        self.queue: TurnQueue[TurnRecord] = TurnQueue(
            self.runner.run,
            label=self.label,
            session_of=lambda r: str(r["session"]),
            on_queued_behind=self.runner.queued,
        )
        self.bot_open_id: str | None = None
        self.seq = 0
        self.tasks: set[asyncio.Task[Any]] = set()

    @property
    def stores(self) -> tuple[Any, ...]:
        return (self.turns, self.buffers, self.seen, self.participants, self.owned, self.bot)

    async def start(self) -> None:
        try:
            for store in self.stores:
                await store.open()
        except OSError as exc:
            raise ServeError(
                f"{self.kind} channel state is unreadable: {exc.strerror or exc} ({exc.filename})"
            ) from None
        cached = self.bot.value
        if (
            isinstance(cached, dict)
            and cached.get("appId") == self.app_id
            and isinstance(cached.get("openId"), str)
        ):
            self.bot_open_id = cached["openId"]
        lookup = self._spawn(self._identity())
        self._spawn(self._visibility())
        await asyncio.wait({lookup}, timeout=BOT_INFO_WAIT_S)
        pending = self.turns.recover()
        if pending:
            log.info("%s recovering %d unfinished turn(s) from a prior run", self.label, len(pending))
        self.seq = max((int(r.get("seq", 0)) for r in pending), default=0)
        for record in pending:
            self.queue.accept(record)

    async def _identity(self) -> None:
        try:
            bot = await self.api.bot_info()
        except FeishuApiError as exc:
            state = (
                "running on the cached identity (bot.json)"
                if self.bot_open_id
                else "group @mention summons stay off until it answers"
            )
            log.warning("%s bot/v3/info failed; %s: %s", self.label, state, exc)
            return
        open_id = bot.get("open_id") if isinstance(bot.get("open_id"), str) else None
        if open_id is None:
            log.warning("%s bot/v3/info returned no open_id — group @mention summons stay off", self.label)
        self.bot_open_id = open_id
        try:
            await self.bot.set(
                {"appId": self.app_id, "openId": open_id} if open_id else {"appId": self.app_id}
            )
        except StateWriteError as exc:
            log.warning("%s could not cache the bot identity: %s", self.label, exc)

    async def _visibility(self) -> None:
        try:
            scopes = await self.api.list_scopes()
        except FeishuApiError as exc:
            log.warning("%s could not inspect group visibility: %s", self.label, exc)
            return
        granted = any(
            s.get("scope_name") == GROUP_CONTEXT_SCOPE and s.get("grant_status") == 1 for s in scopes
        )
        if granted:
            log.info(
                "%s group visibility: context-aware — buffered discussion and bare replies in "
                "the agent's threads",
                self.label,
            )
        else:
            log.warning(
                "%s group visibility: @mentions only — %s is not granted, so bare replies in the "
                "agent's threads and "
                "group context buffering are unavailable",
                self.label,
                GROUP_CONTEXT_SCOPE,
            )

    async def aclose(self) -> None:
        await self.queue.aclose()
        await self.runner.aclose()
        for task in list(self.tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        for store in self.stores:
            await store.aclose()
        await self.store.aclose()
        await self.api.aclose()

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def _answered(self, record: TurnRecord, preview: Mounted | None) -> None:
        self.owned.answered_in(record["chat"], record["session"])
        if preview is not None and preview.thread_id and record.get("in_thread"):
            self.owned.learn_thread(preview.thread_id, record["session"])

    # --- acceptance -------------------------------------------------------------------------------

    def _decide(self, event: Mapping[str, Any]) -> FeishuRoute | None:
        try:
            if self.route is None:
                return default_feishu_route(event, bot_open_id=self.bot_open_id)
            decided = self.route(event)
        except Exception as exc:
            log.error(
                "%s route(event) raised, so the message is dropped: %s",
                self.label,
                one_line(f"{type(exc).__name__}: {exc}", 500),
            )
            return None
        if decided is None or isinstance(decided, FeishuRoute):
            return decided
        if isinstance(decided, Mapping):
            return FeishuRoute(**{k: decided.get(k) for k in ("session", "chat_id", "text")})
        log.error("%s route(event) returned %r: return a FeishuRoute, a dict or None", self.label, decided)
        return None

    async def accept(self, event: Mapping[str, Any]) -> None:
        """Everything a message causes that must be durable before the ACK."""
        m = event.get("message")
        if (
            not isinstance(m, Mapping)
            or not isinstance(m.get("message_id"), str)
            or not isinstance(m.get("chat_id"), str)
        ):
            return
        message_id, chat = m["message_id"], m["chat_id"]
        if message_id in self.seen or self.turns.pending(message_id):
            log.debug("%s message %s was pushed before; ignored", self.label, message_id)
            return
        sender = event.get("sender")
        is_user = isinstance(sender, Mapping) and sender.get("sender_type") == "user"
        speaker = sender_id(sender) or f"unidentified:{message_id}"
        chat_type = str(m.get("chat_type") or "")
        group = chat_type == "group"
        thread_id = m.get("thread_id") if isinstance(m.get("thread_id"), str) and m.get("thread_id") else None
        root_id = m.get("root_id") if isinstance(m.get("root_id"), str) and m.get("root_id") else None
        continuation = bool(thread_id or root_id)
        text, resources = decode_content(m.get("message_type"), m.get("content"), m.get("mentions"))
        mentioned = bool(m.get("mentions"))
        mode = self.modes["p2p" if chat_type == "p2p" else "group"]
        place = f"{chat}:thread:{thread_id}" if thread_id else chat
        owned_session = self.owned.lookup(thread_id=thread_id, root_id=root_id) if continuation else None
        thread_session = owned_session or (
            (f"{self.kind}:{chat}:{thread_id}" if thread_id else None)
            if mode == "continuous"
            else (f"{self.kind}:{root_id or thread_id}" if continuation else None)
        )
        if group and is_user and thread_session:
            self.participants.merge(thread_session, humans=[speaker])
        route = self._decide(event)
        custom = self.route is not None
        if (
            route is None
            and not custom
            and group
            and is_user
            and thread_session
            and not mentioned
            and self.participants.admits_bare_message(thread_session)
        ):
            route = FeishuRoute()
        if route is None:
            if not custom and group and is_user and text.strip():
                entry: dict[str, Any] = {
                    "sender": f"user {speaker}",
                    "body": text,
                    "msg": message_id,
                    "reply": m.get("parent_id"),
                }
                refs = [{"msg": message_id, **r} for r in resources]
                if refs:
                    entry["images"] = [r for r in refs if r["kind"] == "image"]
                    entry["files"] = [r for r in refs if r["kind"] != "image"]
                await self.buffers.push(place, entry)
                self.seen.add(message_id)
            return
        if route.session:
            session = route.session
        elif continuation:
            session = thread_session or f"{self.kind}:{chat}"
        else:
            session = f"{self.kind}:{chat}" if mode == "continuous" else f"{self.kind}:{message_id}"
        new_root = not route.session and not continuation and mode == "threaded"
        parent = None
        if not route.session:
            if mode == "continuous" and thread_id:
                parent = f"{self.kind}:{chat}"
            elif mode == "threaded" and (new_root or owned_session is None):
                room = self.owned.room(chat)
                parent = room if room != session else None
        room_place = (
            chat
            if continuation
            and thread_id
            and not route.session
            and not self.participants.agent_spoke_in(session)
            else None
        )
        target_chat = route.chat_id or chat
        same = target_chat == chat
        if mode == "threaded":
            reply_to, in_thread = (message_id if same else None), same
        else:
            reply_to = message_id if same and (group or thread_id) else None
            in_thread = bool(thread_id) and reply_to is not None
        if is_stop_text(" ".join(w for w in text.split() if not w.startswith("@"))):
            self.seen.add(message_id)
            self._spawn(self._stop(session, FeishuTarget(target_chat, reply_to, in_thread)))
            return
        prompt = route.text if route.text is not None else feishu_envelope(event, self.kind)
        if not prompt.strip() and not resources:
            return
        self.seq += 1
        record: TurnRecord = {
            "id": message_id,
            "seq": self.seq,
            "session": session,
            "text": prompt,
            "place": place,
            "chat": target_chat,
            "reply_to": reply_to,
            "queue_reply_to": message_id if same else None,
            "in_thread": in_thread,
            "parent_id": m.get("parent_id") if isinstance(m.get("parent_id"), str) else None,
            "parent_session": parent,
            "room_place": room_place,
            "images": [{"msg": message_id, "key": r["key"]} for r in resources if r["kind"] == "image"],
            "files": [
                {"msg": message_id, "key": r["key"], "name": r.get("name")}
                for r in resources
                if r["kind"] != "image"
            ],
            "attempts": 0,
        }
        if new_root and same:
            await self.owned.own_root(message_id, session)
        if await self.turns.add(record):
            self.seen.add(message_id)
            self.queue.accept(record)
        if group and is_user and same and not route.session and in_thread:
            self.participants.merge(session, humans=[speaker], agent_spoke=True)

    async def _stop(self, session: str, target: FeishuTarget) -> None:
        feedback = await dispatch_stop(self.control, session, self.label)
        try:
            await self.api.send_text(target, feedback)
        except FeishuApiError as exc:
            log.warning("%s could not answer the stop command: %s", self.label, exc)


def _options(**options: Any) -> dict[str, Any]:
    for name in ("direct_message_session", "group_message_session"):
        if options.get(name) is not None and options[name] not in _MODES:
            raise ServeError(f'{name} must be "threaded" or "continuous", not {options[name]!r}')
    return options


class _Base:
    def __init__(self, cloud: Cloud, options: dict[str, Any]) -> None:
        self.cloud = cloud
        self.kind = cloud.kind
        self.options = options

    def _setting(self, name: str) -> str:
        value = self.options.get(name.lower())
        return str(value) if value is not None else self.cloud.env(name)

    def _credentials(self, factory: str) -> tuple[str, str]:
        app_id, secret = self._setting("APP_ID"), self._setting("APP_SECRET")
        if not app_id or not secret:
            raise ServeError(
                f"{factory} needs {self.cloud.env_prefix}_APP_ID and "
                f"{self.cloud.env_prefix}_APP_SECRET in .env "
                "(developer console -> Credentials & Basic Info)"
            )
        return app_id, secret


class FeishuChannel(_Base):
    """The webhook form: ``channel(ctx)`` mounts ``POST /<kind>``."""

    def __call__(self, ctx: Any) -> ChannelRoutes:
        factory = f"{self.kind}_channel"
        app_id, secret = self._credentials(factory)
        token = self._setting("VERIFICATION_TOKEN")
        if not token:
            raise ServeError(
                f"{factory} needs {self.cloud.env_prefix}_VERIFICATION_TOKEN in .env (console -> "
                "Events & Callbacks)"
            )
        self.state_root = state_root_of(ctx)
        runtime = _Runtime(self.cloud, self.options, ctx, app_id, secret)
        webhook = _Webhook(runtime, token, self._setting("ENCRYPT_KEY") or None)
        return ChannelRoutes({f"/{self.kind}": webhook.handle}, start=runtime.start, close=runtime.aclose)

    async def register_webhook(self, public_url: str) -> str:
        from fastagent_cli.channels.feishu.onboard import register_request_url

        return await register_request_url(
            self.cloud,
            public_url,
            self._setting("APP_ID"),
            self._setting("APP_SECRET"),
            self.options.get("api_base_url"),
        )


class _Webhook:
    def __init__(self, runtime: _Runtime, token: str, encrypt_key: str | None) -> None:
        self.runtime = runtime
        self.token = token
        self.key = encrypt_key
        self.label = runtime.label
        self.prefix = runtime.cloud.env_prefix

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.method != "POST":
            return text_response("POST only\n", 405)
        raw = await read_body_capped(request, MAX_BODY_BYTES)
        if raw is None:
            return text_response("payload too large\n", 413)
        try:
            outer = json.loads(raw)
        except ValueError:
            return text_response("invalid json\n", 400)
        if not isinstance(outer, dict):
            return text_response("invalid json\n", 400)
        if isinstance(outer.get("encrypt"), str):
            if not self.key:
                log.error(
                    "%s an encrypted event arrived but no encrypt key is set: set %s_ENCRYPT_KEY",
                    self.label,
                    self.prefix,
                )
                return text_response("encrypt key not configured\n", 400)
            signature = request.headers.get("x-lark-signature", "")
            timestamp = request.headers.get("x-lark-request-timestamp", "")
            nonce = request.headers.get("x-lark-request-nonce", "")
            if signature and not verify_signature(self.key, timestamp, nonce, signature, raw):
                log.warning("%s rejected an event with an invalid X-Lark-Signature", self.label)
                return text_response("invalid signature\n", 401)
            try:
                envelope = json.loads(decrypt_event(self.key, outer["encrypt"]))
            except (DecryptError, ValueError):
                return text_response("invalid encrypted payload\n", 400 if signature else 401)
            if not isinstance(envelope, dict):
                return text_response("invalid encrypted payload\n", 400)
            if not signature and envelope.get("type") != "url_verification":
                log.warning("%s rejected an unsigned encrypted event", self.label)
                return text_response("invalid signature\n", 401)
        else:
            if self.key:
                log.warning("%s rejected a plaintext event while an encrypt key is set", self.label)
                return text_response("plaintext events not accepted\n", 401)
            envelope = outer
        header: dict[str, Any] = envelope["header"] if isinstance(envelope.get("header"), dict) else {}
        token = envelope.get("token") if isinstance(envelope.get("token"), str) else header.get("token")
        if not secrets_match(token if isinstance(token, str) else None, self.token):
            log.warning(
                "%s rejected an event: verification token mismatch (check %s_VERIFICATION_TOKEN)",
                self.label,
                self.prefix,
            )
            return text_response("invalid token\n", 401)
        if envelope.get("type") == "url_verification" and isinstance(envelope.get("challenge"), str):
            log.info("%s answered the url_verification challenge", self.label)
            return web.json_response({"challenge": envelope["challenge"]})
        if header.get("event_type") != "im.message.receive_v1":
            return web.Response(status=200)
        try:
            await asyncio.shield(self.runtime.accept(envelope.get("event") or {}))
        except StateWriteError as exc:
            log.error(
                "%s could not persist event %s, so it will be pushed again: %s",
                self.label,
                header.get("event_id"),
                exc,
            )
            return text_response("cannot persist the event\n", 500)
        return web.Response(status=200)


class FeishuWebSocketChannel(_Base):
    """The long-connection form: ``connect(ctx, stop)`` (no public URL, no webhook crypto)."""

    @property
    def name(self) -> str:
        return f"{self.kind} websocket"

    def connect(self, ctx: Any, stop: asyncio.Event) -> Any:
        from fastagent_cli.channels.feishu.ws import connect_long_connection

        app_id, secret = self._credentials(f"{self.kind}_websocket_channel")
        runtime = _Runtime(self.cloud, self.options, ctx, app_id, secret)
        base = self.cloud.resolve_api_base(self.options.get("api_base_url"))
        return connect_long_connection(self.cloud.label, base, app_id, secret, runtime, stop)


def _factory_options(
    app_id: str | None,
    app_secret: str | None,
    route: Route | None,
    on_error: OnError | None,
    api_base_url: str | None,
    direct_message_session: str | None,
    group_message_session: str | None,
    **extra: Any,
) -> dict[str, Any]:
    return _options(
        app_id=app_id,
        app_secret=app_secret,
        route=route,
        on_error=on_error,
        api_base_url=api_base_url,
        direct_message_session=direct_message_session,
        group_message_session=group_message_session,
        **extra,
    )


def feishu_channel(
    *,
    app_id: str | None = None,
    app_secret: str | None = None,
    verification_token: str | None = None,
    encrypt_key: str | None = None,
    route: Route | None = None,
    on_error: OnError | None = None,
    api_base_url: str | None = None,
    direct_message_session: str | None = None,
    group_message_session: str | None = None,
) -> FeishuChannel:
    """Feishu over a webhook (``POST /feishu``); ``FEISHU_*`` from the environment when mounted."""
    return FeishuChannel(
        FEISHU,
        _factory_options(
            app_id,
            app_secret,
            route,
            on_error,
            api_base_url,
            direct_message_session,
            group_message_session,
            verification_token=verification_token,
            encrypt_key=encrypt_key,
        ),
    )


def lark_channel(
    *,
    app_id: str | None = None,
    app_secret: str | None = None,
    verification_token: str | None = None,
    encrypt_key: str | None = None,
    route: Route | None = None,
    on_error: OnError | None = None,
    api_base_url: str | None = None,
    direct_message_session: str | None = None,
    group_message_session: str | None = None,
) -> FeishuChannel:
    """Lark over a webhook (``POST /lark``); ``LARK_*`` from the environment when mounted."""
    return FeishuChannel(
        LARK,
        _factory_options(
            app_id,
            app_secret,
            route,
            on_error,
            api_base_url,
            direct_message_session,
            group_message_session,
            verification_token=verification_token,
            encrypt_key=encrypt_key,
        ),
    )


def feishu_websocket_channel(
    *,
    app_id: str | None = None,
    app_secret: str | None = None,
    route: Route | None = None,
    on_error: OnError | None = None,
    api_base_url: str | None = None,
    direct_message_session: str | None = None,
    group_message_session: str | None = None,
) -> FeishuWebSocketChannel:
    """Feishu over the WebSocket long connection (only ``FEISHU_APP_ID`` / ``FEISHU_APP_SECRET``)."""
    return FeishuWebSocketChannel(
        FEISHU,
        _factory_options(
            app_id, app_secret, route, on_error, api_base_url, direct_message_session, group_message_session
        ),
    )


def lark_websocket_channel(
    *,
    app_id: str | None = None,
    app_secret: str | None = None,
    route: Route | None = None,
    on_error: OnError | None = None,
    api_base_url: str | None = None,
    direct_message_session: str | None = None,
    group_message_session: str | None = None,
) -> FeishuWebSocketChannel:
    """Lark over the WebSocket long connection (only ``LARK_APP_ID`` / ``LARK_APP_SECRET``)."""
    return FeishuWebSocketChannel(
        LARK,
        _factory_options(
            app_id, app_secret, route, on_error, api_base_url, direct_message_session, group_message_session
        ),
    )
