"""The classic Slack rendering (``rendering="classic"``, and any top-level target): one
``💭 Thinking…`` message, posted on the first tool or reasoning activity (a quick answer is posted
once, whole), edited at most every :data:`CLASSIC_UPDATE_INTERVAL_S` (``chat.update`` is Tier 3,
50+ a minute), then edited into the first :data:`~fastagent_cli.channels.slack.markdown.MAX_MARKDOWN`
characters of the answer; the rest follows as new messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from fastagent_cli.channels.kit.preview import THINKING_PLACEHOLDER, progress, revealed_answer
from fastagent_cli.channels.kit.reply import LiveReply
from fastagent_cli.channels.slack.api import SlackApi, SlackApiError, SlackTarget
from fastagent_cli.channels.slack.markdown import (
    MAX_MARKDOWN,
    chunk_markdown,
    chunk_text,
    sanitize_markdown,
    with_footer,
)
from fastagent_cli.contract import AgentEvent, Text

__all__ = ["CLASSIC_UPDATE_INTERVAL_S", "ClassicReply"]

log = logging.getLogger("fastagent.channel")

CLASSIC_UPDATE_INTERVAL_S = 3.0


class ClassicReply(LiveReply[SlackApi, SlackTarget]):
    def __init__(
        self, api: SlackApi, target: SlackTarget, disclaimer: str | None, preview_ts: str | None
    ) -> None:
        super().__init__(api, target, throttle_s=CLASSIC_UPDATE_INTERVAL_S, label="[slack]")
        self.disclaimer = disclaimer
        self.preview_ts = preview_ts
        self.posted = preview_ts is not None
        self.last_text = ""
        self.last_write = time.monotonic() if preview_ts else float("-inf")

    def render(self) -> str:
        answer = sanitize_markdown(revealed_answer(self.view, CLASSIC_UPDATE_INTERVAL_S))
        text = progress(self.view, THINKING_PLACEHOLDER, answer)
        return chunk_text(text, MAX_MARKDOWN)[0]

    async def flush(self) -> None:
        text = self.render()
        if text == self.last_text:
            return
        self.last_text = text
        await self._spaced()
        if self.preview_ts is not None:
            await self.api.update(self.target.channel_id, self.preview_ts, markdown=text)
        elif not self.posted:
            self.posted = True
            self.preview_ts = await self.api.post(self.target, markdown=text)
        self.last_write = time.monotonic()

    async def _spaced(self) -> None:
        wait = self.last_write + CLASSIC_UPDATE_INTERVAL_S - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    async def finalize(self, markdown: str) -> None:
        await self.pump.finish()
        if not markdown.strip():
            if self.preview_ts:
                with contextlib.suppress(SlackApiError):
                    await self.api.delete(self.target.channel_id, self.preview_ts)
            return
        head, *rest = chunk_markdown(markdown)
        if self.preview_ts:
            try:
                await self._spaced()
                await self.api.update(self.target.channel_id, self.preview_ts, markdown=head)
            except SlackApiError as exc:
                log.warning("[slack] could not edit the preview into the answer (%s); posting it anew", exc)
                with contextlib.suppress(SlackApiError):
                    await self.api.delete(self.target.channel_id, self.preview_ts)
                await self.api.send_markdown(self.target, markdown)
                return
            for part in rest:  # the edited head is authoritative: never resend it
                await self.api.post(self.target, markdown=part)
            return
        await self.api.send_markdown(self.target, markdown)

    async def settle(self, text: str) -> None:
        await self.finalize(sanitize_markdown(text))

    async def complete(self) -> None:
        await self.settle(with_footer(self.view.answer, self.disclaimer))

    def touches(self, event: AgentEvent) -> bool:
        """A text delta repaints only once some answer is revealed (the first one is posted whole)."""
        return not isinstance(event, Text) or bool(revealed_answer(self.view, CLASSIC_UPDATE_INTERVAL_S))
