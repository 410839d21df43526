"""The runtime of one mounted Slack channel: its state stores (``turns``, ``seen``, ``buffers``,
``thread-participants``, ``welcomed``, ``bot-auth``), its runner and queue, the bot token's
``auth.test`` (asked again at most once a minute after a failure) and the start/stop around them.

Event acceptance lives in :class:`~fastagent_cli.channels.slack.intake.SlackIntake`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Protocol

from fastagent_cli.channels.kit.approvals import ApprovalAsks
from fastagent_cli.channels.kit.context_buffer import ContextBuffer
from fastagent_cli.channels.kit.home import open_channel_state
from fastagent_cli.channels.kit.participants import ThreadParticipants
from fastagent_cli.channels.kit.runtime import ChannelRuntime
from fastagent_cli.channels.kit.seen import SeenRing
from fastagent_cli.channels.kit.turn_store import TurnStore
from fastagent_cli.channels.slack.api import SlackApi, SlackApiError, resolve_api_base
from fastagent_cli.channels.slack.approvals import SlackApprovals
from fastagent_cli.channels.slack.bot_auth import BotToken
from fastagent_cli.channels.slack.parse import buffer_line
from fastagent_cli.channels.slack.runner import SlackRunner, is_turn
from fastagent_cli.errors import ServeError


class SlackOptions(Protocol):
    """What the runtime reads of the mounted :class:`~.channel.SlackChannel` (typed here, so the
    runtime does not import the module that imports it)."""

    options: dict[str, Any]

    def _setting(self, name: str) -> str: ...


__all__ = ["AUTH_RETRY_S", "AUTH_WAIT_S", "DEFAULT_WELCOME", "KIND", "SlackRuntime"]

log = logging.getLogger("fastagent.channel")

KIND = "slack"
DEFAULT_WELCOME = (
    "👋 Hi! I'm an AI agent here to help. Ask a question or describe a task and I'll get to work."
)
AUTH_WAIT_S = 2.0
AUTH_RETRY_S = 60.0


class _Welcomed(SeenRing):
    """Users who got the one-time DM welcome (``team:user``)."""

    name = "welcomed"


def _expires_at(value: str) -> int | None:
    if not value:
        return None
    try:
        return int(float(value))
    except ValueError:
        raise ServeError(f"SLACK_BOT_TOKEN_EXPIRES_AT must be epoch milliseconds, not {value!r}") from None


class SlackRuntime(ChannelRuntime):
    """One mounted Slack channel: its state, its runner and queue, and their start and stop."""

    kind = KIND
    label = "[slack]"

    def __init__(self, options: SlackOptions, ctx: Any, bot_token: str, secret: str) -> None:
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
        self.asks = ApprovalAsks(store, label="[slack]")
        self.participants = ThreadParticipants(store, label="[slack]")
        self.welcomed = _Welcomed(store, label="[slack]", capacity=100_000)
        self.run_on(
            SlackRunner(
                self.runner_parts(ctx, o.get("on_error")),
                rendering=o.get("rendering", "native"),
                disclaimer=o.get("ai_disclaimer"),
                reactions=reactions,
                ready=self.authenticated,
            )
        )
        runner = self.runner
        assert isinstance(runner, SlackRunner)
        self.approvals = runner.approvals = SlackApprovals(
            self.api, self.control, secret, self.tasks, self.asks
        )
        self.team: str | None = None
        self.bot_user: str | None = None
        self.auth: asyncio.Task[bool] | None = None
        self.auth_at = float("-inf")
        self.welcoming: set[str] = set()

    @property
    def stores(self) -> tuple[Any, ...]:
        return (self.turns, self.buffers, self.seen, self.asks, self.participants, self.welcomed)

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.open_state(self.token)
        self.auth = self.tasks.spawn(self._auth_test())
        await asyncio.wait({self.auth}, timeout=AUTH_WAIT_S)
        for record in self.recover():
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

    async def authenticated(self) -> bool:
        """Does the bot token work (``auth.test``, asked again after a minute when it failed)?"""
        auth = self.auth
        if auth is None:
            return False
        if auth.done() and not auth.result() and time.monotonic() - self.auth_at >= AUTH_RETRY_S:
            auth = self.auth = self.tasks.spawn(self._auth_test())
        try:
            return await asyncio.wait_for(asyncio.shield(auth), AUTH_WAIT_S)
        except TimeoutError:
            return False

    def closables(self) -> tuple[Any, ...]:
        return (*self.stores, self.token.document, self.store, self.api)
