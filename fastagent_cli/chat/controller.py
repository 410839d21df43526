"""The chat's state and actions, shared by the terminal UI and the plain (no-TTY) mode.

State lives in the session store, as for every host, and the chat reaches it only through the
opened agent's session hub (``opened.control``, and the owner's face on it, ``opened.sessions``):
the model and thinking level a chat shows are the session's settings
(``model_change`` / ``thinking_level_change`` entries, which the engine applies to later turns),
resolved the way the engine runs them; ``/model`` and ``/thinking`` write them under the session's
lease. Reading for display never repairs or writes a record; only a leased writer does.

While a turn runs, steers and follow-ups reach it through the session hub
(:meth:`ChatController.hub_session`, sent by :mod:`fastagent_cli.chat.run_actions` as attach sends
them over ``/control``); :meth:`ChatController.compact` compacts the session and
waits for the outcome.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastagent_cli.assembly import OpenedAgent, SessionSettings, SessionView
from fastagent_cli.chat.attachments import PendingAttachments
from fastagent_cli.chat.session_link import LocalLink
from fastagent_cli.chat.status import StatusInfo, UsageTotals
from fastagent_cli.chat.tool_lines import ToolLog
from fastagent_cli.chat.turns import Driven, TurnRun, TurnSink
from fastagent_cli.contract import Scope
from fastagent_cli.control import ActionResult, Session
from fastagent_cli.errors import FastagentError, SessionError, UsageError
from fastagent_cli.messages import ThinkingLevel, message_text

__all__ = ["ChatController", "SessionInfo", "new_session_id"]


def new_session_id() -> str:
    return f"chat-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session: str
    path: Path | None
    exists: bool
    entries: int
    messages: int
    last_prompt: str = ""
    last_answer: str = ""


class ChatController:
    def __init__(
        self, opened: OpenedAgent, session: str | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.opened = opened
        self.link = LocalLink(opened)
        """Runs start and the session is reached through it, as attach does through its remote link."""
        self.agent = self.link.agent
        self.sessions = opened.sessions
        self.clock = clock
        self.session = session or new_session_id()
        self.defaults = self.sessions.defaults()
        self.settings: SessionSettings = self.defaults
        self.usage = UsageTotals()
        self.tools = ToolLog()
        self.last_answer = ""
        self.pending: SessionSettings | None = None
        """Settings carried into a new session, written before its first turn."""
        self.pinned: str | None = None
        """An explicit ``--model`` for a session that does not exist yet: recorded with its first turn."""
        self.attachments = PendingAttachments()
        """Files ``/attach`` (or a pasted path) added: they go with the next prompt."""

    # --- derived --------------------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The session's model spec."""
        return self.settings.spec

    @property
    def thinking(self) -> ThinkingLevel:
        return self.settings.thinking

    @property
    def levels(self) -> tuple[ThinkingLevel, ...]:
        """The thinking levels the session's model supports."""
        return self.settings.available_thinking

    def status(self, hint: str = "") -> StatusInfo:
        return StatusInfo(self.model, self.thinking, self.session, self.usage, hint)

    @property
    def session_path(self) -> Path | None:
        return self.sessions.location(self.session)

    # --- sessions -------------------------------------------------------------------------------

    async def load(self) -> SessionInfo:
        """Read the current session's settings and usage (nothing is written)."""
        view = await self.sessions.read(self.session)
        if view is not None:
            self.settings = view.settings
        elif self.pinned is None:
            self.settings = self.defaults
        self.usage = UsageTotals()
        if view is None:
            return SessionInfo(self.session, self.session_path, False, 0, 0)
        self.usage = UsageTotals.from_entries(view.entries)
        last_prompt, last_answer = _last_exchange(view.messages)
        if last_answer:
            self.last_answer = last_answer
        return SessionInfo(
            self.session,
            view.path,
            True,
            len(view.entries),
            view.message_count,
            last_prompt,
            last_answer,
        )

    def new_session(self) -> str:
        """Start a fresh session; a model or thinking level chosen in this chat carries over."""
        self.session = new_session_id()
        self.usage = UsageTotals()
        self.last_answer = ""
        self.pending = self.settings
        return self.session

    async def resume(self, session: str) -> SessionInfo:
        previous = self.session
        self.session = session
        try:
            info = await self.load()
        except SessionError:
            self.session = previous
            raise
        if not info.exists:
            self.session = previous
            raise UsageError(f"no session {session!r} in {self.opened.sessions_dir} (see /resume)")
        self.pending = self.pinned = None
        return info

    async def _write_pending(self) -> None:
        if self.pending is not None:
            await self.sessions.carry(self.session, self.pending)
            self.pending = None
        if self.pinned is not None:
            self.settings = await self.sessions.pin_model(self.session, self.pinned)
            self.pinned = None

    async def pin_model(self, spec: str) -> None:
        """An explicit ``--model`` (``chat --continue --model ...``): it runs the next turn and is
        recorded as the session's model, at once for a stored session, else with its first turn."""
        view = await self.sessions.read(self.session)
        if view is None:
            self.pinned = spec
            self.settings = self.sessions.plan(self.defaults, model=spec)[1]
        else:
            self.settings = await self.sessions.pin_model(self.session, spec)

    # --- settings (the shared commands' SessionOps) -----------------------------------------------

    async def model_choices(self) -> Sequence[str]:
        return self.sessions.model_specs()

    async def thinking_help(self) -> str:
        levels = ", ".join(self.levels)
        return f"thinking {self.thinking} ({self.model} supports: {levels}); /thinking <level> sets it"

    def control_session(self) -> Session:
        return self.hub_session()

    async def move_leaf(self, leaf: str) -> ActionResult:
        """Through the session owner: chat writes its own session whatever ``session_control`` says."""
        return await self.sessions.navigate(self.session, leaf)

    async def set_model(self, spec: str) -> str:
        self.sessions.plan(self.settings, model=spec)  # an unknown model writes nothing
        await self._write_pending()
        self.settings = await self.sessions.update(self.session, model=spec, create=True)
        line = f"model {self.model} for session {self.session} (thinking {self.thinking})"
        warning = self.sessions.key_warning(self.settings)
        return line + (f"; warning: {warning}" if warning else "")

    async def set_thinking(self, level: str) -> str:
        self.sessions.plan(self.settings, thinking=level)  # a level the model lacks writes nothing
        await self._write_pending()
        self.settings = await self.sessions.update(self.session, thinking=level, create=True)
        return f"thinking {self.settings.requested_thinking} for session {self.session}"

    # --- runs -----------------------------------------------------------------------------------

    def hub_session(self) -> Session:
        """The current session on the session hub (its live events, its run actions)."""
        return self.link.control.sessions.get(self.session)

    async def compact(self, instructions: str | None = None) -> str:
        """Compact the session and wait for it (cancelling aborts it); the line to show."""
        session = self.hub_session()
        async with session.events() as events:
            started = await self.sessions.compact(self.session, instructions)
            if not started.ok:
                assert started.error is not None
                raise UsageError(started.error.message)
            outcome: Mapping[str, Any] | None = None
            try:
                async for event in events:
                    if event.type == "compaction_finished":
                        outcome = event.data
                        break
            except BaseException:  # Ctrl+C (cancelled), or the stream ended under us
                await session.abort()
                raise
        if outcome is None:
            raise SessionError("the session's events ended during the compaction")
        if "error" in outcome:
            raise FastagentError(str(outcome["error"]))
        if outcome.get("aborted"):
            return "compaction aborted; the history is unchanged"
        summary = str(outcome.get("summary", ""))
        return f"compacted session {self.session}: older history is now a {len(summary)}-character summary"

    # --- turns ----------------------------------------------------------------------------------

    async def begin_turn(self, text: str, sink: TurnSink | None = None) -> TurnRun:
        """The turn ``text`` starts, shown on ``sink`` from its invoke stream (plain mode); without
        a sink it is shown from the session's events (the terminal chat's
        :class:`~fastagent_cli.chat.transcript.Transcript`, numbering the tools in :attr:`tools`)
        and the invoke stream only drives it."""
        await self._write_pending()
        if sink is None:
            sink, tools = Driven(), ToolLog()
        else:
            tools = self.tools
        prompt = self.attachments.prompt(text)
        return TurnRun(self.link.agent, Scope(self.session), prompt, sink, tools, self.clock)

    async def end_turn(self, run: TurnRun) -> None:
        if run.answer:
            self.last_answer = run.answer
        if run.status == "completed" and run.usage is not None:
            self.usage.add(run.usage)
        elif run.status != "completed":  # rounds that finished before the stop still cost tokens
            try:
                view = await self.sessions.read(self.session)
            except SessionError:
                return  # the next turn reports an unreadable record; the status keeps its sums
            if view is not None:
                self.usage = UsageTotals.from_entries(view.entries)

    async def info(self) -> SessionInfo:
        view: SessionView | None = await self.sessions.read(self.session)
        if view is None:
            return SessionInfo(self.session, self.session_path, False, 0, 0)
        return SessionInfo(self.session, view.path, True, len(view.entries), view.message_count)


def _last_exchange(messages: Sequence[Any]) -> tuple[str, str]:
    prompt, answer = "", ""
    for message in reversed(messages):
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        if role == "assistant" and not answer:
            answer = message_text(message)
        elif role == "user":
            prompt = message_text(message)
            break
    return prompt, answer
