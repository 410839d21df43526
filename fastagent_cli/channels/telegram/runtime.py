"""The runtime of one mounted Telegram channel: its state stores (``turns``, ``buffers``, ``seen``),
its runner and queue, the bot's ``getMe`` (asked again at most once a minute while it is unknown)
and the start/stop around them.

Update acceptance is :class:`~fastagent_cli.channels.telegram.intake.TelegramIntake`, built on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Protocol

from fastagent_cli.channels.kit.approvals import ApprovalAsks
from fastagent_cli.channels.kit.context_buffer import ContextBuffer
from fastagent_cli.channels.kit.home import open_channel_state
from fastagent_cli.channels.kit.invoke import OnError
from fastagent_cli.channels.kit.runtime import ChannelRuntime
from fastagent_cli.channels.kit.seen import SeenRing
from fastagent_cli.channels.kit.turn_store import TurnStore
from fastagent_cli.channels.telegram.api import BotApi, TelegramApiError
from fastagent_cli.channels.telegram.approvals import TelegramApprovals
from fastagent_cli.channels.telegram.parse import bot_id_from_token, buffer_line
from fastagent_cli.channels.telegram.runner import TurnRunner, is_turn, turn_order

__all__ = ["GET_ME_RETRY_S", "GET_ME_WAIT_S", "KIND", "PRIVACY_WARNING", "TelegramRuntime"]

log = logging.getLogger("fastagent.channel")

KIND = "telegram"
PRIVACY_WARNING = (
    "[telegram] privacy mode is on: the bot only sees @mentions, replies and commands in groups, so it "
    "cannot keep a group's context. Disable it via @BotFather → /setprivacy."
)
GET_ME_WAIT_S = 2.0
GET_ME_RETRY_S = 60.0


class TelegramOptions(Protocol):
    """What the runtime reads of the mounted :class:`~.channel.TelegramChannel` (typed here, so the
    runtime does not import the module that imports it)."""

    route: Any
    on_error: OnError | None
    bot_username: str | None
    api_base_url: str | None


class TelegramRuntime(ChannelRuntime):
    """One mounted Telegram channel: its state, its runner and queue, and their start and stop."""

    kind = KIND
    label = "[telegram]"

    def __init__(self, options: TelegramOptions, ctx: Any, token: str) -> None:
        self.control = getattr(ctx, "control", None)
        self.bot_id = bot_id_from_token(token)
        self.bot_username = options.bot_username
        self.route = options.route
        store = self.store = open_channel_state(ctx, KIND)
        self.turns = TurnStore(store, label="[telegram]", is_record=is_turn, order=turn_order)
        self.buffers = ContextBuffer(store, label="[telegram]", line=buffer_line)
        self.seen = SeenRing(store, label="[telegram]")
        self.asks = ApprovalAsks(store, label="[telegram]")
        self.api = BotApi(token, options.api_base_url)
        self.run_on(TurnRunner(self.runner_parts(ctx, options.on_error)))
        runner = self.runner
        assert isinstance(runner, TurnRunner)
        self.approvals = runner.approvals = TelegramApprovals(self.api, self.control, self.tasks, self.asks)
        self._lookup: asyncio.Task[None] | None = None
        self._looked_up = float("-inf")
        if self.bot_id is None:
            log.warning("[telegram] the bot token has no numeric bot id: reply-to-bot summons wait for getMe")

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.open_state()
        self._lookup = self.tasks.spawn(self._get_me())
        await asyncio.wait({self._lookup}, timeout=GET_ME_WAIT_S)
        for record in self.recover():
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

    @property
    def stores(self) -> tuple[Any, ...]:
        return (self.turns, self.buffers, self.seen, self.asks)
