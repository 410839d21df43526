"""Completion for slash commands and their arguments (prompt-toolkit).

``/`` completes command names and skill names; ``/model`` model specs from the catalog (substring
match, so ``/model sonnet`` finds ``anthropic/claude-sonnet-4-5``); ``/thinking`` the levels the
session's model supports; ``/resume`` this agent's sessions with their first prompt and age.
Directory reads are cached for a few seconds so completing while typing stays cheap.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from fastagent_cli.assembly import SessionSummary
from fastagent_cli.chat.commands import ALIASES, COMMANDS
from fastagent_cli.chat.controller import ChatController
from fastagent_cli.chat.sessions_list import format_age
from fastagent_cli.chat.skills import SkillInfo, list_skills

__all__ = ["SlashCompleter"]

T = TypeVar("T")
_TTL_S = 3.0


class _Cached(Generic[T]):
    def __init__(self, load: Callable[[], list[T]]) -> None:
        self._load = load
        self._at = -_TTL_S
        self._value: list[T] = []

    def get(self) -> list[T]:
        now = time.monotonic()
        if now - self._at > _TTL_S:
            self._value = self._load()
            self._at = now
        return self._value


class SlashCompleter(Completer):
    def __init__(self, ctl: ChatController) -> None:
        self.ctl = ctl
        self._specs: list[str] | None = None
        self._skills: _Cached[SkillInfo] = _Cached(lambda: list_skills(ctl.opened))
        self._sessions: _Cached[SessionSummary] = _Cached(ctl.sessions.list_sessions)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        name, space, arg = text[1:].partition(" ")
        if not space:
            yield from self._names(name)
            return
        command = ALIASES.get(name, name)
        if command == "model":
            yield from self._model(arg)
        elif command == "thinking":
            yield from _starting(arg, self.ctl.levels, "")
        elif command == "thinking-display":
            yield from _starting(arg, ("on", "off"), "")
        elif command == "resume":
            yield from self._resume(arg)

    def _names(self, prefix: str) -> Iterable[Completion]:
        for command in COMMANDS.values():
            if command.name.startswith(prefix):
                yield Completion(
                    command.name, -len(prefix), display="/" + command.name, display_meta=command.help
                )
        skills: list[SkillInfo] = self._skills.get()
        for skill in skills:
            if skill.name.startswith(prefix) and skill.name not in COMMANDS:
                yield Completion(
                    skill.name,
                    -len(prefix),
                    display="/" + skill.name,
                    display_meta="skill: " + skill.description,
                )

    def _model(self, arg: str) -> Iterable[Completion]:
        if self._specs is None:
            specs = self.ctl.sessions.model_specs()
            extra = [s for s in (self.ctl.defaults.spec, "scripted/echo") if s not in specs]
            self._specs = specs + extra
        needle = arg.strip().lower()
        for spec in self._specs:
            if needle in spec.lower():
                meta = "current" if spec == self.ctl.model else ""
                yield Completion(spec, -len(arg), display_meta=meta)

    def _resume(self, arg: str) -> Iterable[Completion]:
        sessions: list[SessionSummary] = self._sessions.get()
        needle = arg.strip().lower()
        for summary in sessions:
            if needle in summary.session.lower() or needle in summary.first_prompt.lower():
                meta = f"{format_age(summary.modified)}  {summary.first_prompt}"
                yield Completion(summary.session, -len(arg), display_meta=meta)


def _starting(arg: str, values: Iterable[str], meta: str) -> Iterable[Completion]:
    for value in values:
        if value.startswith(arg.strip()):
            yield Completion(value, -len(arg), display_meta=meta)
