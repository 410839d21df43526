"""Slack acceptance: what an event the ingress let through causes — a durable turn, a buffered context
line, a stop command, a one-time welcome, or nothing — made durable before the ``200``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastagent_cli.channels.kit.invoke import truncate
from fastagent_cli.channels.kit.routes import decide_route
from fastagent_cli.channels.kit.stop import dispatch_stop, is_stop_text
from fastagent_cli.channels.kit.turn_store import TurnRecord
from fastagent_cli.channels.slack.api import SlackApiError, SlackTarget
from fastagent_cli.channels.slack.parse import (
    SlackRoute,
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
from fastagent_cli.channels.slack.runtime import SlackRuntime

__all__ = ["SlackIntake"]

log = logging.getLogger("fastagent.channel")


class SlackIntake(SlackRuntime):
    """The acceptance boundary of one mounted channel (its state and runner are the runtime's)."""

    def _thread_key(self, team: str, channel: str, ts: str) -> str:
        return f"slack:{team}:{channel}:{ts}"

    async def accept(self, envelope: dict[str, Any]) -> None:
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
        return decide_route(
            self.route,
            lambda: default_slack_route(envelope),
            envelope,
            SlackRoute,
            lambda d: SlackRoute(
                **{k: d.get(k) for k in ("session", "channel_id", "thread_ts", "text")},
                top_level=bool(d.get("top_level")),
            ),
            label="[slack]",
            argument="envelope",
            dropped="the event",
        )

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
