"""Running the Feishu/Lark turns the channel accepted (features O11-O13; the lifecycle is
:mod:`~fastagent_cli.channels.kit.lifecycle`'s).

At dequeue: the discussion buffered in the turn's place is folded in (and, for the first turn of a
new thread, the room's unanswered discussion, read without consuming it); a reply summon loads the
quoted message (its text, whole up to 4 096 code points, and its attachments as primary input) and
the reply chain above it (up to :data:`MAX_CHAIN_ANCESTORS` messages sharing one more 4 096 budget,
a truncation line when the walk stops early); images become vision inputs and files are saved under
``<state root>/channels/<kind>/files/<chat>/``. A new thread session starts from its room's
history (``Scope.parent_session``, with the quoted ids as branch hints). The answer streams as a
card (:mod:`~fastagent_cli.channels.feishu.deliver`).
"""

from __future__ import annotations

import base64
import logging
import os
import re
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastagent_cli.channels.feishu.api import FeishuApi, FeishuApiError, FeishuTarget
from fastagent_cli.channels.feishu.deliver import Mounted, mount_preview, settle_preview, stream_reply
from fastagent_cli.channels.feishu.parse import decode_content
from fastagent_cli.channels.kit.context_buffer import BUFFER_ATTACH_MAX, Fold
from fastagent_cli.channels.kit.files import save_attachment
from fastagent_cli.channels.kit.invoke import (
    REFERENT_MAX_CODE_POINTS,
    ManifestFile,
    attachments_suffix,
    referent,
    truncate,
)
from fastagent_cli.channels.kit.lifecycle import QUEUED_NOTICE, SettledNotice, run_durable_turn
from fastagent_cli.channels.kit.runner import ChannelRunner, RunnerParts, folded
from fastagent_cli.channels.kit.turn_store import TurnRecord
from fastagent_cli.contract import AgentEvent, Failed, ImageRef, Scope
from fastagent_cli.errors import one_line

__all__ = ["MAX_CHAIN_ANCESTORS", "QUEUED_NOTICE", "REPLY_HINT", "FeishuRunner", "is_turn"]

log = logging.getLogger("fastagent.channel")

MAX_CHAIN_ANCESTORS = 8
REPLY_HINT = (
    "\n\n(Format your reply in standard Markdown — it is rendered in a Feishu/Lark card. This reply is "
    "delivered to the current chat by the channel itself: do not call a send tool to answer the "
    "current chat.)"
)


def _refs(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(r, dict) and isinstance(r.get("msg"), str) and isinstance(r.get("key"), str) for r in value
    )


def is_turn(record: TurnRecord) -> bool:
    optional = ("reply_to", "parent_id", "parent_session", "room_place", "queue_reply_to")
    return (
        isinstance(record.get("seq"), int)
        and isinstance(record.get("text"), str)
        and isinstance(record.get("place"), str)
        and isinstance(record.get("chat"), str)
        and isinstance(record.get("in_thread"), bool)
        and all(record.get(k) is None or isinstance(record.get(k), str) for k in optional)
        and _refs(record.get("images"))
        and _refs(record.get("files"))
    )


def target_of(record: TurnRecord, *, queue: bool = False) -> FeishuTarget:
    reply = record.get("queue_reply_to") if queue else record.get("reply_to")
    return FeishuTarget(record["chat"], reply, bool(record.get("in_thread")) and reply is not None)


def _sender(sender: Any, app_id: str) -> str | None:
    if not isinstance(sender, dict):
        return None
    is_app = sender.get("sender_type") == "app"
    if is_app and sender.get("id") == app_id:
        return "you, the agent"
    return f"{'app' if is_app else 'user'} {sender['id']}" if sender.get("id") else None


class FeishuRunner(ChannelRunner[FeishuApi, None]):
    def __init__(
        self,
        parts: RunnerParts[FeishuApi],
        *,
        label: str,
        on_answered: Callable[[TurnRecord, Mounted | None], None],
    ) -> None:
        super().__init__(parts, label=label)
        self.on_answered = on_answered
        self.previews: dict[str, Mounted] = {}

    async def notice(self, record: TurnRecord) -> None:
        try:
            self.previews[record["id"]] = await mount_preview(
                self.api, target_of(record, queue=True), QUEUED_NOTICE, self.label
            )
        except FeishuApiError as exc:
            log.warning("%s the queue card failed (the turn still runs): %s", self.label, exc)

    async def run(self, record: TurnRecord) -> None:
        notice = self.notices.take(record["id"])
        if notice is not None:
            await notice
        preview = self.previews.pop(record["id"], None)
        target = target_of(record)

        async def execute() -> None:
            fold = self.buffers.peek(record["place"])
            room = self.buffers.peek(record["room_place"]) if record.get("room_place") else Fold("", ())
            used = await stream_reply(
                self._events(record, fold, room), self.api, target, self.format_error, preview, self.label
            )
            self.on_answered(record, used)

        settled = SettledNotice(
            lambda text: settle_preview(self.api, target, preview, text), preview is not None, self.label
        )
        await run_durable_turn(
            self.turns,
            record,
            label=self.label,
            where=f"chat={record['chat']}",
            execute=execute,
            on_exceeded=settled.exceeded,
            on_defer=settled.defer,
        )

    async def _events(self, record: TurnRecord, fold: Fold, room: Fold) -> AsyncIterator[AgentEvent]:
        try:
            images, suffix, hints = await self._inputs(record, [*room.consumed, *fold.consumed])
        except (FeishuApiError, OSError) as exc:
            yield Failed(f"could not load an attachment: {one_line(str(exc), 300)}", True)
            return
        blocks = ""
        if room.text:
            blocks += (
                "[recent discussion in the room this thread branched from — not yet answered there:\n"
                f"{room.text}\n]\n\n"
            )
        prompt = folded(record["text"], fold) + suffix + REPLY_HINT
        scope = Scope(
            record["session"],
            record.get("parent_session"),
            tuple(hints) if record.get("parent_session") else (),
        )
        async for event in self.answer(record, fold, blocks + prompt, images, scope):
            yield event

    async def _inputs(
        self, record: TurnRecord, buffered_entries: list[dict[str, Any]]
    ) -> tuple[list[ImageRef], str, list[str]]:
        images = [dict(r) for r in record["images"]]
        files = [dict(r) for r in record["files"]]
        block = ""
        hints: list[str] = []
        chain: list[dict[str, Any]] = []
        parent_id = record.get("parent_id")
        if parent_id:
            hints.append(parent_id)
            parent = await self._fetch(parent_id)
            if parent is None:
                block = f"\n\n[replied-to message (msg {parent_id}) could not be read]"
            else:
                text, resources = decode_content(
                    parent.get("msg_type"), (parent.get("body") or {}).get("content"), parent.get("mentions")
                )
                for r in resources:
                    (images if r["kind"] == "image" else files).append(
                        {"msg": parent_id, "key": r["key"], "name": r.get("name")}
                    )
                who = _sender(parent.get("sender"), self.api.app_id)
                origin = f", from {who}" if who else ""
                block = f"\n\n[replied-to message (msg {parent_id}{origin}): {referent(text) or '(empty)'}]"
                chain_block, chain, ids = await self._chain(parent.get("parent_id"), {parent_id})
                block += chain_block
                hints += ids
        loaded_images = [await self._image(r["msg"], r["key"]) for r in images]
        manifest = [await self._file(r["msg"], r["key"], r.get("name"), record["chat"]) for r in files]
        primary = {(r["msg"], r["key"]) for r in images + files}
        background: list[dict[str, Any]] = []
        for item in chain + [
            {**r, "from": e.get("sender")}
            for e in buffered_entries
            for r in (e.get("images") or []) + (e.get("files") or [])
        ]:
            if (item["msg"], item["key"]) not in primary and all(
                (b["msg"], b["key"]) != (item["msg"], item["key"]) for b in background
            ):
                background.append(item)
        lost = max(0, len(background) - 2 * BUFFER_ATTACH_MAX)
        for item in background[: 2 * BUFFER_ATTACH_MAX]:
            try:
                if item.get("kind", "file" if item.get("name") else "image") == "image":
                    loaded_images.append(await self._image(item["msg"], item["key"]))
                else:
                    saved = await self._file(item["msg"], item["key"], item.get("name"), record["chat"])
                    manifest.append(saved.attributed(str(item.get("from")), item["msg"]))
            except (FeishuApiError, OSError) as exc:
                lost += 1
                log.warning("%s an earlier (background) attachment did not load: %s", self.label, exc)
        return (
            loaded_images,
            block + attachments_suffix(manifest, lost),
            hints,
        )

    async def _fetch(self, message_id: str) -> dict[str, Any] | None:
        try:
            return await self.api.get_message(message_id)
        except FeishuApiError as exc:
            log.warning("%s could not read message %s: %s", self.label, message_id, exc)
            return None

    async def _chain(self, start: Any, visited: set[str]) -> tuple[str, list[dict[str, Any]], list[str]]:
        lines: list[str] = []
        refs: list[dict[str, Any]] = []
        ids: list[str] = []
        budget = REFERENT_MAX_CODE_POINTS
        reached_root = start is None
        current = start if isinstance(start, str) else None
        while current is not None:
            if current in visited or len(ids) >= MAX_CHAIN_ANCESTORS or budget <= 0:
                break
            visited.add(current)
            message = await self._fetch(current)
            if message is None:
                break
            text, resources = decode_content(
                message.get("msg_type"), (message.get("body") or {}).get("content"), message.get("mentions")
            )
            who = _sender(message.get("sender"), self.api.app_id)
            for r in resources:
                refs.append(
                    {
                        "msg": current,
                        "key": r["key"],
                        "name": r.get("name"),
                        "kind": r["kind"],
                        "from": who or "reply chain",
                    }
                )
            shown = truncate(text, budget) or "(empty)"
            budget -= len(shown)
            lines.append(f"(msg {current}{f', from {who}' if who else ''}): {shown}")
            ids.append(current)
            parent = message.get("parent_id")
            if not parent:
                reached_root = True
            current = parent if isinstance(parent, str) and parent else None
        if not lines:
            return "", refs, ids
        lines.reverse()
        if not reached_root:
            lines.insert(0, "(…the chain continues above this point)")
        return "\n[reply chain above it, oldest first:\n" + "\n".join(lines) + "]", refs, ids

    async def _image(self, message_id: str, key: str) -> ImageRef:
        data, content_type = await self.api.download(message_id, key, "image")
        mime = content_type.split(";")[0].strip()
        return ImageRef(
            mime if mime.startswith("image/") else "image/jpeg", base64.b64encode(data).decode("ascii")
        )

    async def _file(self, message_id: str, key: str, name: Any, chat: str) -> ManifestFile:
        data, _ = await self.api.download(message_id, key, "file")
        shown = str(name or key)
        safe = re.sub(r"[/\\]", "_", os.path.basename(shown)).lstrip(".") or "file"
        path = self.files / chat / f"{uuid.uuid4().hex[:8]}-{safe}"
        await save_attachment(path, data)
        return ManifestFile(shown, len(data), str(path))
