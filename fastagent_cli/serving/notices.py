"""Background notices while serving: the ``On Start`` section and MCP resource watches.

When ``dev`` / ``start`` begin serving, :class:`NoticeHost` subscribes to the watched MCP
resources, then sends the definition's On Start section as the first notice (source
``prompt:on-start``) to the session ``on-start``, with the watch notices already queued at
startup folded in, so startup is one turn. Without a section and without queued notices no model
request is made. ``dev`` reloads do not fire it again (the supervisor marks later workers).

Later resource updates become notices in the same session as they arrive (idle: a run at once;
during a run: one coalesced follow-up turn). Replies go to the log (``[notice] ...``); a reply of
exactly ``NO_REPLY`` is not delivered. Everything stays in the session record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from fastagent_cli.assembly import OpenedAgent
from fastagent_cli.contract import AgentEvent, Failed
from fastagent_cli.control import NOTICE_SESSION, ON_START_SOURCE, Inbox, Notice, is_no_reply
from fastagent_cli.errors import one_line

__all__ = ["NoticeHost"]

log = logging.getLogger("fastagent.notices")


class NoticeHost:
    """Feeds On Start and resource-watch notices to the agent; logs the replies."""

    def __init__(self, opened: OpenedAgent) -> None:
        self.opened = opened
        self.inbox: Inbox = opened.inbox(self)
        self.fired_on_start = False
        self._task: asyncio.Task[None] | None = None

    @staticmethod
    def startup_lines_for(opened: OpenedAgent, *, on_start: bool) -> list[str]:
        """What the startup report says about notices."""
        lines = []
        if on_start and opened.on_start() is not None:
            lines.append(f"on start: a notice to session {NOTICE_SESSION} once serving begins")
        watched = opened.watched_resources()
        if watched:
            lines.append(f"watching {len(watched)} MCP resource(s): {', '.join(watched)}")
        return lines

    def start(self, *, on_start: bool) -> None:
        """Begin (in the background): watches first, then the startup turn."""
        if self._task is None:
            self._task = asyncio.create_task(self._begin(on_start), name="fastagent-notices")

    async def _begin(self, on_start: bool) -> None:
        try:
            queued = await self.opened.start_watches(self._watched)
        except Exception as exc:  # a watch problem never stops serving
            log.warning("[notice] resource watches unavailable: %s", one_line(str(exc) or repr(exc), 300))
            queued = []
        startup: list[Notice] = []
        text = self.opened.on_start() if on_start else None
        if text is not None:
            startup.append(Notice(ON_START_SOURCE, text))
            self.fired_on_start = True
        startup.extend(queued)
        if startup:
            self.inbox.post_many(NOTICE_SESSION, startup)

    def _watched(self, notice: Notice) -> None:
        self.inbox.post(NOTICE_SESSION, notice)

    async def stop(self, within: float) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait({task}, timeout=within)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.inbox.aclose(), within)

    # --- InboxSink ---------------------------------------------------------------------------------

    def on_input(self, session: str, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "notice":
            log.info("[notice] %s ← %s", session, data.get("source"))

    def on_event(self, session: str, event: AgentEvent) -> None:
        if isinstance(event, Failed):
            log.warning("[notice] %s: the run failed: %s", session, event.details)

    def on_reply(self, session: str, text: str) -> None:
        if is_no_reply(text):
            log.debug("[notice] %s: NO_REPLY (not delivered)", session)
            return
        log.info("[notice] %s reply: %s", session, text.strip())
