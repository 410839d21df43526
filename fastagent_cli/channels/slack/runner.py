"""Running the Slack turns the webhook accepted (the lifecycle is :mod:`~fastagent_cli.channels.
kit.lifecycle`'s): a queued turn gets a ``⏳ Queued`` notice (or, in a DM, a queued Agent status);
at dequeue the discussion buffered in its place is folded in, its files resolved (``files.info``
now: only ids were persisted), the triggering message gets 👀, the Agent runs with the busy-wait,
and the answer is rendered (:mod:`~fastagent_cli.channels.slack.deliver`). On ``completed`` the
intent is removed and the fold committed; 👀 becomes ✅.

Files: an image becomes a vision input; any other file is saved as
``<state root>/channels/slack/files/<channel>/<file id>-<name>`` and listed in the prompt. A file of
the summoning message that cannot be loaded fails the turn visibly; buffered files degrade one by
one into a note.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable

from fastagent_cli.channels.kit.context_buffer import BUFFER_ATTACH_MAX, Fold
from fastagent_cli.channels.kit.files import save_attachment
from fastagent_cli.channels.kit.invoke import ManifestFile, attachments_suffix
from fastagent_cli.channels.kit.lifecycle import (
    DROPPED_NOTICE,
    QUEUED_NOTICE,
    SettledNotice,
    run_durable_turn,
)
from fastagent_cli.channels.kit.runner import ChannelRunner, RunnerParts, folded
from fastagent_cli.channels.kit.turn_store import TurnRecord
from fastagent_cli.channels.slack.api import SlackApi, SlackApiError, SlackTarget
from fastagent_cli.channels.slack.deliver import render_reply, settle_notice
from fastagent_cli.contract import AgentEvent, Failed, ImageRef
from fastagent_cli.errors import one_line

__all__ = ["DROPPED_NOTICE", "MARKDOWN_HINT", "QUEUED_NOTICE", "SlackRunner", "is_turn"]

log = logging.getLogger("fastagent.channel")

MARKDOWN_HINT = (
    "\n\n(Format your reply as standard Markdown. Slack renders it natively. Do not use HTML or Slack "
    "control-mention syntax such as <!here>, <!channel>, or <!everyone>.)"
)


def is_turn(record: TurnRecord) -> bool:
    return (
        isinstance(record.get("seq"), int)
        and isinstance(record.get("text"), str)
        and isinstance(record.get("place"), str)
        and isinstance(record.get("team"), str)
        and isinstance(record.get("channel"), str)
        and (record.get("thread") is None or isinstance(record.get("thread"), str))
        and (record.get("user") is None or isinstance(record.get("user"), str))
        and (record.get("title") is None or isinstance(record.get("title"), str))
        and isinstance(record.get("files"), list)
        and all(isinstance(f, str) for f in record["files"])
        and (record.get("preview") is None or isinstance(record.get("preview"), str))
    )


def target_of(record: TurnRecord) -> SlackTarget:
    return SlackTarget(record["channel"], record.get("thread"), record.get("user"), record["team"])


def _message_of(record: TurnRecord) -> tuple[str, str] | None:
    """The triggering message ``(channel, ts)``: the turn id is ``team:channel:ts``."""
    parts = record["id"].split(":")
    return (parts[1], parts[2]) if len(parts) == 3 and parts[1] and parts[2] else None


class SlackRunner(ChannelRunner[SlackApi, None]):
    def __init__(
        self,
        parts: RunnerParts[SlackApi],
        *,
        rendering: str,
        disclaimer: str | None,
        reactions: tuple[str, str] | None,
        ready: Callable[[], Awaitable[bool]],
    ) -> None:
        super().__init__(parts, label="[slack]")
        self.rendering = rendering
        self.disclaimer = disclaimer
        self.reactions = reactions
        self.ready = ready

    def _native_dm(self, record: TurnRecord) -> bool:
        return self.rendering == "native" and bool(record.get("thread")) and record["channel"].startswith("D")

    async def notice(self, record: TurnRecord) -> None:
        try:
            if self._native_dm(record):
                await self.api.set_status(target_of(record), "is queued behind an earlier request…")
                return
            ts = await self.api.post(target_of(record), text=QUEUED_NOTICE)
            record["preview"] = ts
            self.turns.note(record["id"], preview=ts)
        except SlackApiError as exc:
            log.warning("[slack] the queue notice failed (the turn still runs): %s", exc)

    async def run(self, record: TurnRecord) -> None:
        notice = self.notices.take(record["id"])
        if notice is not None:
            await notice
        if not await self.ready():
            log.error(
                "[slack] deferring turn %s: Slack authentication failed (fix SLACK_BOT_TOKEN)", record["id"]
            )
            return
        target = target_of(record)

        preview = record.get("preview")
        settled = SettledNotice(
            lambda text: settle_notice(self.api, target, preview, text), bool(preview), "[slack]"
        )
        await run_durable_turn(
            self.turns,
            record,
            label="[slack]",
            where=f"channel={record['channel']}",
            execute=lambda: self._execute(record, target),
            on_exceeded=settled.exceeded,
            on_defer=settled.defer,
        )

    async def _execute(self, record: TurnRecord, target: SlackTarget) -> None:
        fold = self.buffers.peek(record["place"])
        message = _message_of(record) if self.reactions else None
        reacted = False
        if message is not None and self.reactions is not None:
            try:
                await self.api.react(*message, self.reactions[0])
                reacted = True
            except SlackApiError as exc:
                log.warning("[slack] could not add the processing reaction (no ack): %s", exc)
        await render_reply(
            self._events(record, fold),
            self.api,
            target,
            self.format_error,
            rendering=self.rendering,
            preview_ts=record.get("preview"),
            title=record.get("title"),
            disclaimer=self.disclaimer,
        )
        if reacted and message is not None and self.reactions is not None:
            with contextlib.suppress(SlackApiError):
                await self.api.react(*message, self.reactions[0], remove=True)
                await self.api.react(*message, self.reactions[1])

    async def _events(self, record: TurnRecord, fold: Fold) -> AsyncIterator[AgentEvent]:
        try:
            images, suffix = await self._attachments(record, fold)
        except (SlackApiError, OSError) as exc:
            yield Failed(f"could not load a Slack attachment: {one_line(str(exc), 300)}", True)
            return
        prompt = folded(record["text"], fold) + suffix + MARKDOWN_HINT
        async for event in self.answer(record, fold, prompt, images):
            yield event

    async def _attachments(self, record: TurnRecord, fold: Fold) -> tuple[list[ImageRef], str]:
        images: list[ImageRef] = []
        files: list[ManifestFile] = []
        for file_id in record["files"]:
            self._resolved(await self._resolve(file_id, record["channel"]), images, files)
        primary = set(record["files"])
        buffered: list[tuple[str, str, str]] = []
        for entry in fold.consumed:
            for file_id in entry.get("files") or []:
                if file_id not in primary and all(b[0] != file_id for b in buffered):
                    buffered.append((file_id, str(entry.get("sender")), str(entry.get("msg"))))
        skipped = max(0, len(buffered) - BUFFER_ATTACH_MAX)
        lost = 0
        for file_id, sender, msg in buffered[-BUFFER_ATTACH_MAX:]:
            try:
                resolved = await self._resolve(file_id, record["channel"])
            except (SlackApiError, OSError) as exc:
                lost += 1
                log.warning("[slack] an earlier (buffered) file did not load: %s", exc)
                continue
            if isinstance(resolved, ManifestFile):
                resolved = resolved.attributed(sender, msg)
            self._resolved(resolved, images, files)
        return images, attachments_suffix(files, lost + skipped)

    @staticmethod
    def _resolved(item: ImageRef | ManifestFile, images: list[ImageRef], files: list[ManifestFile]) -> None:
        if isinstance(item, ImageRef):
            images.append(item)
        else:
            files.append(item)

    async def _resolve(self, file_id: str, channel: str) -> ImageRef | ManifestFile:
        info = await self.api.file_info(file_id)
        data, content_type = await self.api.download(info)
        mime = str(info.get("mimetype") or content_type.split(";")[0]).strip().lower()
        if mime.startswith("image/"):
            return ImageRef(mime, base64.b64encode(data).decode("ascii"))
        name = str(info.get("name") or info.get("title") or file_id)
        safe = re.sub(r"[/\\]", "_", os.path.basename(name)).lstrip(".") or "file"
        path = self.files / channel / f"{file_id}-{safe}"
        await save_attachment(path, data)
        return ManifestFile(name, len(data), str(path))
