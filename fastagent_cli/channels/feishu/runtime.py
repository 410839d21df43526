"""The runtime of one mounted Feishu/Lark channel: its state stores, its turn runner and queue, and
the lifecycle around them (open the stores, learn the bot identity, recover unfinished turns, close).

Acceptance of pushed events is :class:`~fastagent_cli.channels.feishu.intake.FeishuIntake`, built on it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastagent_cli.channels.feishu.api import FeishuApi, FeishuApiError
from fastagent_cli.channels.feishu.approvals import FeishuApprovals
from fastagent_cli.channels.feishu.cloud import Cloud
from fastagent_cli.channels.feishu.deliver import Mounted
from fastagent_cli.channels.feishu.owned import OwnedThreads
from fastagent_cli.channels.feishu.parse import buffer_line
from fastagent_cli.channels.feishu.runner import FeishuRunner, is_turn
from fastagent_cli.channels.kit.approvals import ApprovalAsks
from fastagent_cli.channels.kit.context_buffer import ContextBuffer
from fastagent_cli.channels.kit.document import StateDocument
from fastagent_cli.channels.kit.home import open_channel_state
from fastagent_cli.channels.kit.journal import StateWriteError
from fastagent_cli.channels.kit.participants import ThreadParticipants
from fastagent_cli.channels.kit.runtime import ChannelRuntime
from fastagent_cli.channels.kit.seen import SeenRing
from fastagent_cli.channels.kit.turn_store import TurnRecord, TurnStore

__all__ = ["BOT_INFO_WAIT_S", "GROUP_CONTEXT_SCOPE", "FeishuRuntime"]

log = logging.getLogger("fastagent.channel")

GROUP_CONTEXT_SCOPE = "im:message.group_msg"
BOT_INFO_WAIT_S = 2.0


class FeishuRuntime(ChannelRuntime):
    """The state, the turn engine and their lifecycle of one mounted Feishu/Lark channel."""

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
        self.asks = ApprovalAsks(store, label=self.label)
        self.participants = ThreadParticipants(store, label=self.label)
        self.owned = OwnedThreads(store, label=self.label)
        self.bot = StateDocument(
            store,
            "bot",
            label=self.label,
            check=lambda v: isinstance(v, dict) and isinstance(v.get("appId"), str),
        )
        self.run_on(
            FeishuRunner(
                self.runner_parts(ctx, options.get("on_error")),
                label=self.label,
                on_answered=self._answered,
            )
        )
        runner = self.runner
        assert isinstance(runner, FeishuRunner)
        self.approvals = runner.approvals = FeishuApprovals(self.api, self.control, cloud.kind, self.asks)
        self.bot_open_id: str | None = None

    @property
    def stores(self) -> tuple[Any, ...]:
        return (self.turns, self.buffers, self.seen, self.asks, self.participants, self.owned, self.bot)

    async def start(self) -> None:
        await self.open_state()
        cached = self.bot.value
        if (
            isinstance(cached, dict)
            and cached.get("appId") == self.app_id
            and isinstance(cached.get("openId"), str)
        ):
            self.bot_open_id = cached["openId"]
        lookup = self.tasks.spawn(self._identity())
        self.tasks.spawn(self._visibility())
        await asyncio.wait({lookup}, timeout=BOT_INFO_WAIT_S)
        for record in self.recover():
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

    def _answered(self, record: TurnRecord, preview: Mounted | None) -> None:
        self.owned.answered_in(record["chat"], record["session"])
        if preview is not None and preview.thread_id and record.get("in_thread"):
            self.owned.learn_thread(preview.thread_id, record["session"])
