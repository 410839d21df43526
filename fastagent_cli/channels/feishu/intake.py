"""Feishu/Lark acceptance: one pushed ``im.message.receive_v1`` event -> a durable turn, a buffered
context line, a stop command, or nothing (routing O9; see :mod:`~fastagent_cli.channels.feishu.channel`).

Everything :meth:`FeishuIntake.accept` does is durable before the platform gets its ACK.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastagent_cli.channels.feishu.api import FeishuApiError, FeishuTarget
from fastagent_cli.channels.feishu.parse import (
    FeishuRoute,
    decode_content,
    default_feishu_route,
    feishu_envelope,
    sender_id,
)
from fastagent_cli.channels.feishu.runtime import FeishuRuntime
from fastagent_cli.channels.kit.routes import decide_route
from fastagent_cli.channels.kit.stop import dispatch_stop, is_stop_text
from fastagent_cli.channels.kit.turn_store import TurnRecord

__all__ = ["FeishuIntake"]

log = logging.getLogger("fastagent.channel")


class FeishuIntake(FeishuRuntime):
    """The acceptance boundary of one mounted channel (its state and runner are the runtime's)."""

    def _decide(self, event: Mapping[str, Any]) -> FeishuRoute | None:
        return decide_route(
            self.route,
            lambda: default_feishu_route(event, bot_open_id=self.bot_open_id),
            event,
            FeishuRoute,
            lambda d: FeishuRoute(**{k: d.get(k) for k in ("session", "chat_id", "text")}),
            label=self.label,
            argument="event",
            dropped="the message",
        )

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
            self.tasks.spawn(self._stop(session, FeishuTarget(target_chat, reply_to, in_thread)))
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
            "asker": speaker,
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
