"""Delivering one Slack turn (features N9-N11): a native Agent stream, or one edited message.

**Native** (the default, for a threaded target): the DM thread gets Slack's loading status and a
title; the answer streams through ``chat.startStream`` → ``chat.appendStream`` → ``chat.stopStream``.
Everything between two writes is batched into one call's ``chunks`` — ``markdown_text`` chunks for
the answer and ``task_update`` chunks for the tools (``in_progress`` when a tool starts, then
``complete`` or ``error``) — and writes are at least :data:`NATIVE_APPEND_INTERVAL_S` apart, inside
``chat.appendStream``'s Tier 4 limit (100+ a minute). Thinking and tool output stay private. When
Slack definitively refuses native streaming before anything was streamed (``missing_scope``,
``not_allowed_token_type``...), the answer goes out once as plain Markdown messages; an ambiguous
failure (network, ``internal_error``) is never retried, since the stream may exist.

**Classic** (``rendering="classic"``, and always for a top-level target: a stream needs a parent
message): one edited message (:mod:`~fastagent_cli.channels.slack.classic`).

Both neutralise ``<!channel>`` and friends, add the optional ``ai_disclaimer`` footer, and answer a
failed turn with ``on_error``'s text (``""``: say nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from fastagent_cli.channels.kit.invoke import ChannelFailure, OnError
from fastagent_cli.channels.kit.lifecycle import TurnFailed, TurnStopped
from fastagent_cli.channels.kit.preview import humanize_tool_name, summarize_tool_args
from fastagent_cli.channels.kit.reply import ENDED_EARLY
from fastagent_cli.channels.slack.api import SlackApi, SlackApiError, SlackTarget, native_unavailable
from fastagent_cli.channels.slack.classic import CLASSIC_UPDATE_INTERVAL_S, ClassicReply
from fastagent_cli.channels.slack.markdown import (
    MAX_MARKDOWN,
    NO_REPLY,
    chunk_text,
    sanitize_markdown,
    with_footer,
)
from fastagent_cli.contract import (
    ABORTED_CODE,
    AgentEvent,
    Completed,
    Failed,
    Retrying,
    Text,
    ToolEnded,
    ToolStarted,
)

__all__ = [
    "CLASSIC_UPDATE_INTERVAL_S",
    "NATIVE_APPEND_INTERVAL_S",
    "NO_REPLY",
    "render_reply",
    "settle_notice",
]

log = logging.getLogger("fastagent.channel")

NATIVE_APPEND_INTERVAL_S = 0.75
WORKING_STATUS = "is working on your request…"
RETRY_STATUS = "hit a temporary problem — retrying…"
STREAM_STOPPED = "⚠️ The response stream stopped unexpectedly. Please try again."


async def settle_notice(api: SlackApi, target: SlackTarget, preview_ts: str | None, text: str) -> None:
    """Turn a queue notice into ``text`` (or post ``text`` when there is none)."""
    if preview_ts:
        await api.update(target.channel_id, preview_ts, text=text)
    else:
        await api.post(target, text=text)


async def render_reply(
    events: AsyncIterator[AgentEvent],
    api: SlackApi,
    target: SlackTarget,
    format_error: OnError,
    *,
    rendering: str,
    preview_ts: str | None = None,
    title: str | None = None,
    disclaimer: str | None = None,
) -> None:
    """Deliver one turn. Raises :class:`TurnFailed` (the user was told), :class:`TurnStopped`, or
    :class:`SlackApiError` when the answer could not be delivered."""
    if rendering == "native" and target.thread_ts:
        await _Native(api, target, format_error, disclaimer).run(events, preview_ts, title)
    else:
        if rendering == "native":
            log.info("[slack] a top-level reply cannot stream natively: using the classic renderer")
        await ClassicReply(api, target, disclaimer, preview_ts).deliver(events, format_error)


class _Native:
    def __init__(
        self, api: SlackApi, target: SlackTarget, format_error: OnError, disclaimer: str | None
    ) -> None:
        self.api = api
        self.target = target
        self.format_error = format_error
        self.disclaimer = disclaimer
        self.stream_ts: str | None = None
        self.pending: list[dict[str, Any]] = []
        self.held = ""
        self.answer = ""
        self.tools: dict[str, dict[str, Any]] = {}
        self.error: BaseException | None = None
        self.last_write = float("-inf")
        self.writer: asyncio.Task[None] | None = None
        self.wake = asyncio.Event()
        self.closing = False
        self.status_task: asyncio.Task[None] | None = None

    async def run(self, events: AsyncIterator[AgentEvent], preview_ts: str | None, title: str | None) -> None:
        if preview_ts:
            with contextlib.suppress(SlackApiError):
                await self.api.delete(self.target.channel_id, preview_ts)
        if self.target.is_dm:
            await self._status(WORKING_STATUS)
            if title:
                try:
                    await self.api.set_title(self.target, title)
                except SlackApiError as exc:
                    log.warning("[slack] could not set the thread title: %s", exc)
        self.writer = asyncio.create_task(self._write_loop())
        retrying = False
        try:
            async for event in events:
                if retrying and not isinstance(event, Retrying):
                    retrying = False
                    await self._status(WORKING_STATUS)
                if isinstance(event, Text):
                    self.answer += event.delta
                    self._text(event.delta)
                elif isinstance(event, ToolStarted):
                    task: dict[str, Any] = {
                        "type": "task_update",
                        "id": f"tool-{len(self.tools) + 1}",
                        "title": sanitize_markdown(humanize_tool_name(event.name)),
                        "status": "in_progress",
                    }
                    details = sanitize_markdown(summarize_tool_args(event.args))
                    if details:
                        task["details"] = details
                    self.tools[event.id] = task
                    self._chunk(dict(task))
                elif isinstance(event, ToolEnded):
                    started = self.tools.get(event.id)
                    if started is not None:
                        self._chunk({**started, "status": "error" if event.is_error else "complete"})
                elif isinstance(event, Retrying) and self.target.is_dm:
                    retrying = True
                    await self._status(RETRY_STATUS)
                elif isinstance(event, Completed):
                    footer = with_footer(self.answer, self.disclaimer)[len(self.answer.strip()) :]
                    if not self.answer.strip():
                        footer = footer.lstrip()
                    self._text(footer, final=True)
                    await self._settle()
                    return
                elif isinstance(event, Failed):
                    aborted = event.code == ABORTED_CODE
                    notice = (
                        ""
                        if aborted
                        else (
                            self.format_error(ChannelFailure(event.details, event.retryable, event.code))
                            or ""
                        )
                    )
                    if notice:
                        self._text(("\n\n" if self.answer.strip() else "") + notice, final=True)
                    elif not self.answer.strip() and not self.stream_ts and not self.pending and not aborted:
                        self._text(STREAM_STOPPED, final=True)
                    await self._settle(quiet=True)
                    if aborted:
                        raise TurnStopped(event.details)
                    raise TurnFailed(f"{event.details} (retryable={str(event.retryable).lower()})")
            self._text(("\n\n" if self.answer.strip() else "") + STREAM_STOPPED, final=True)
            await self._settle(quiet=True)
            raise TurnFailed(ENDED_EARLY)
        finally:
            if self.writer is not None and not self.writer.done():
                self.writer.cancel()
                with contextlib.suppress(BaseException):
                    await self.writer
            if self.target.is_dm:
                await self._status("")

    async def _status(self, status: str) -> None:
        try:
            await self.api.set_status(self.target, status)
        except SlackApiError as exc:
            log.warning("[slack] could not set the Agent status: %s", exc)

    def _text(self, delta: str, *, final: bool = False) -> None:
        text = self.held + delta
        self.held = ""
        if not final:
            opening = text.rfind("<")
            if opening >= 0 and ">" not in text[opening:] and len(text) - opening <= 256:
                text, self.held = text[:opening], text[opening:]  # a control token split across deltas
        if not text:
            return
        clean = sanitize_markdown(text)
        if self.pending and self.pending[-1]["type"] == "markdown_text":
            clean = self.pending.pop()["text"] + clean
        for part in chunk_text(clean, MAX_MARKDOWN):
            self.pending.append({"type": "markdown_text", "text": part})
        self.wake.set()

    def _chunk(self, chunk: dict[str, Any]) -> None:
        if self.held:
            self._text("", final=True)
        self.pending.append(chunk)
        self.wake.set()

    async def _write_loop(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            wait = self.last_write + NATIVE_APPEND_INTERVAL_S - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await self._flush()
            if self.closing and not self.pending:
                return

    async def _flush(self) -> None:
        if not self.pending or self.error is not None:
            return
        batch, self.pending = self.pending, []
        try:
            if self.stream_ts is None:
                self.stream_ts = await self.api.start_stream(self.target, chunks=batch)
            else:
                await self.api.append_stream(self.target.channel_id, self.stream_ts, chunks=batch)
        except SlackApiError as exc:
            self.error = exc
        finally:
            self.last_write = time.monotonic()  # spaced from the answer: a slow write never bunches two

    async def _settle(self, *, quiet: bool = False) -> None:
        self.closing = True
        self.wake.set()
        if self.writer is not None:
            await self.writer
        if self.error is not None:
            error = self.error
            if self.stream_ts is None and isinstance(error, SlackApiError) and native_unavailable(error):
                log.warning(
                    "[slack] native streaming is unavailable (%s): sending one Markdown reply", error.code
                )
                text = sanitize_markdown(self.answer.strip()) or NO_REPLY
                await self.api.send_markdown(
                    self.target, with_footer(text, self.disclaimer) if not quiet else text
                )
                return
            if self.stream_ts is not None:
                with contextlib.suppress(SlackApiError):
                    await self.api.stop_stream(
                        self.target.channel_id, self.stream_ts, markdown=f"\n\n{STREAM_STOPPED}"
                    )
            if quiet:
                log.error("[slack] the reply stream failed: %s", error)
                return
            raise error
        if self.stream_ts is not None:
            await self.api.stop_stream(self.target.channel_id, self.stream_ts)
