"""The chat's state and actions, shared by the terminal UI and the plain (no-TTY) mode.

State lives in the session store, as for every host: the model and thinking level a chat shows are
read from the session record (``model_change`` / ``thinking_level_change`` entries, which the
engine applies to later turns), and ``/model`` and ``/thinking`` append those entries under the
session's lease. Reading for display never repairs or writes a record; only a leased writer does.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastagent_cli.assembly import OpenedAgent
from fastagent_cli.chat.sessions_list import message_text
from fastagent_cli.chat.status import StatusInfo, UsageTotals
from fastagent_cli.chat.tool_lines import ToolLog
from fastagent_cli.chat.turns import TurnRun, TurnSink
from fastagent_cli.contract import Prompt, Scope
from fastagent_cli.errors import ModelError, SessionError, UsageError
from fastagent_cli.models.credentials import missing_hint
from fastagent_cli.models.registry import parse_spec
from fastagent_cli.models.thinking import clamp_thinking, supported_levels
from fastagent_cli.models.types import THINKING_LEVELS, ModelInfo, ThinkingLevel
from fastagent_cli.sessions.record import SessionRecord
from fastagent_cli.sessions.store import FileSessionStore

__all__ = ["ChatController", "SessionInfo", "new_session_id"]

Entries = list[tuple[str, dict[str, Any]]]


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
        self.agent = opened.agent
        self.store = opened.agent.config.sessions
        self.clock = clock
        self.session = session or new_session_id()
        self.default_model = opened.registry.resolve(opened.model_spec)
        self.model: ModelInfo = self.default_model
        self.thinking_requested: ThinkingLevel = opened.config.thinking_level
        self.usage = UsageTotals()
        self.tools = ToolLog()
        self.last_answer = ""
        self.pending: Entries = []
        """Settings carried into a new session, written before its first turn."""

    # --- derived --------------------------------------------------------------------------------

    @property
    def thinking(self) -> ThinkingLevel:
        return clamp_thinking(self.thinking_requested, self.model)

    def status(self, hint: str = "") -> StatusInfo:
        return StatusInfo(self.model.spec, self.thinking, self.session, self.usage, hint)

    @property
    def session_path(self) -> Path | None:
        return self.store.path_for(self.session) if isinstance(self.store, FileSessionStore) else None

    # --- sessions -------------------------------------------------------------------------------

    async def load(self) -> SessionInfo:
        """Read the current session's settings and usage (nothing is written)."""
        record = await self._read()
        self.model, self.thinking_requested = self.default_model, self.opened.config.thinking_level
        self.usage = UsageTotals()
        if record is None:
            return SessionInfo(self.session, self.session_path, False, 0, 0)
        context = record.context()
        if context.model and all(context.model):
            try:
                self.model = self.opened.registry.resolve(f"{context.model[0]}/{context.model[1]}")
            except ModelError:
                pass  # the engine falls back to the agent's model too
        if context.thinking_level in THINKING_LEVELS:
            self.thinking_requested = context.thinking_level
        self.usage = UsageTotals.from_entries(record.entries)
        last_prompt, last_answer = _last_exchange(context.messages)
        if last_answer:
            self.last_answer = last_answer
        return SessionInfo(
            self.session,
            self.session_path,
            True,
            len(record.entries),
            record.message_count,
            last_prompt,
            last_answer,
        )

    async def _read(self) -> SessionRecord | None:
        path = self.session_path
        if path is None:
            return await self.store.open_if_exists(self.session)
        if not path.exists():
            return None
        lines = await asyncio.to_thread(_read_lines, path)
        if not lines or lines[0].get("type") != "session":
            raise SessionError(f"{path} is not a session record (no header line)")
        return SessionRecord(self.session, lines[0], lines[1:], sink=None)

    def new_session(self) -> str:
        """Start a fresh session; a model or thinking level chosen in this chat carries over."""
        carry: Entries = []
        if self.model.spec != self.default_model.spec:
            carry.append(("model_change", {"provider": self.model.provider, "modelId": self.model.id}))
        if self.thinking_requested != self.opened.config.thinking_level:
            carry.append(("thinking_level_change", {"thinkingLevel": self.thinking_requested}))
        self.session = new_session_id()
        self.usage = UsageTotals()
        self.last_answer = ""
        self.pending = carry
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
        self.pending = []
        return info

    async def _record(self, entries: Entries) -> None:
        """Append setting entries to the session record under its lease."""
        release = self.store.try_lease(self.session)
        if release is None:
            raise SessionError(f"session {self.session} is busy (a turn is running elsewhere); try again")
        try:
            record = await self.store.open_or_create(self.session)
            record.append_many(entries)
        finally:
            release()

    # --- settings -------------------------------------------------------------------------------

    async def set_model(self, spec: str) -> str:
        info = self.opened.registry.resolve(spec)
        _, level = parse_spec(spec.strip())
        entries: Entries = [("model_change", {"provider": info.provider, "modelId": info.id})]
        if level is not None:
            entries.append(("thinking_level_change", {"thinkingLevel": clamp_thinking(level, info)}))
        await self._record([*self.pending, *entries])
        self.pending = []
        self.model = info
        if level is not None:
            self.thinking_requested = clamp_thinking(level, info)
        line = f"model {info.spec} for session {self.session} (thinking {self.thinking})"
        credential = self.agent.credential(info)
        if credential.missing:
            line += f"; warning: no API key for {info.provider} ({missing_hint(info)})"
        return line

    async def set_thinking(self, level: str) -> str:
        levels = supported_levels(self.model)
        if level not in levels:
            raise UsageError(
                f"{self.model.spec} supports thinking levels: {', '.join(levels)} (not {level!r})"
            )
        chosen: ThinkingLevel = next(lv for lv in levels if lv == level)
        await self._record([*self.pending, ("thinking_level_change", {"thinkingLevel": chosen})])
        self.pending = []
        self.thinking_requested = chosen
        return f"thinking {chosen} for session {self.session}"

    # --- turns ----------------------------------------------------------------------------------

    async def begin_turn(self, text: str, sink: TurnSink) -> TurnRun:
        if self.pending:
            await self._record(self.pending)
            self.pending = []
        return TurnRun(self.agent, Scope(self.session), Prompt(text), sink, self.tools, self.clock)

    async def end_turn(self, run: TurnRun) -> None:
        if run.answer:
            self.last_answer = run.answer
        if run.status == "completed" and run.usage is not None:
            self.usage.add(run.usage)
        elif run.status != "completed":  # rounds that finished before the stop still cost tokens
            try:
                record = await self._read()
            except SessionError:
                return  # the next turn reports an unreadable record; the status keeps its sums
            if record is not None:
                self.usage = UsageTotals.from_entries(record.entries)

    async def info(self) -> SessionInfo:
        record = await self._read()
        if record is None:
            return SessionInfo(self.session, self.session_path, False, 0, 0)
        return SessionInfo(self.session, self.session_path, True, len(record.entries), record.message_count)


def _read_lines(path: Path) -> list[dict[str, Any]]:
    from fastagent_cli.state.atomic import read_jsonl

    return list(read_jsonl(path))


def _last_exchange(messages: list[Any]) -> tuple[str, str]:
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
