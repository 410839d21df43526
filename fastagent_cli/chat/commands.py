"""Slash commands: what they do (on a :class:`ChatController`, through a :class:`ChatUI`) and their
completion.

A line starting with ``/`` is a command; ``//text`` sends ``/text`` as a prompt. ``/<skill-name>
[request]`` asks the model to use that skill. Unknown commands are an error, never a prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from fastagent_cli.chat.clipboard import copy_text
from fastagent_cli.chat.controller import ChatController
from fastagent_cli.chat.session_commands import SHARED, SharedCommand
from fastagent_cli.chat.sessions_list import format_age
from fastagent_cli.chat.skills import list_skills, skill_prompt
from fastagent_cli.chat.tool_lines import ToolRecord
from fastagent_cli.errors import FastagentError, UsageError, one_line

__all__ = ["COMMANDS", "KEYS_HELP", "ChatUI", "CommandOutcome", "dispatch"]

KEYS_HELP = [
    ("Enter", "send; while an answer streams, steer it with what you typed"),
    ("Alt+Enter, Esc Enter or Ctrl+J", "insert a newline; while an answer streams, queue a follow-up"),
    ("Tab", "complete a /command or its argument"),
    ("Up / Down", "history (kept in <state root>/chat_history)"),
    ("Ctrl+T", "show or hide thinking (also during a turn)"),
    ("Ctrl+C", "interrupt the running turn or /compact; clear the prompt; twice on an empty prompt exits"),
    ("Ctrl+D", "exit"),
]


class ChatUI(Protocol):
    show_thinking: bool

    def info(self, text: str) -> None: ...

    def error(self, text: str) -> None: ...

    def rows(self, title: str, rows: list[tuple[str, str]]) -> None: ...

    def tool_output(self, record: ToolRecord) -> None: ...

    def show_session(self, prompt: str, answer: str) -> None: ...

    async def choose(self, title: str, options: list[tuple[str, str]]) -> str | None:
        """Let the user pick one of ``(value, label)``; ``None`` when cancelled or impossible."""
        ...

    def terminal_writer(self) -> Callable[[str], None] | None: ...


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    exit: bool = False
    send: str | None = None
    """A prompt to send as a turn (``/<skill>``)."""
    ok: bool = True


Handler = Callable[[ChatController, "ChatUI", str], Awaitable[CommandOutcome | None]]


def _shared(command: SharedCommand) -> Command:
    """One of the commands chat shares with attach (:mod:`.session_commands`), on the chat's session."""

    async def run(ctl: ChatController, ui: ChatUI, arg: str) -> None:
        await command.run(ctl, ui, arg)

    return Command(command.name, command.args, command.help, run)


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    args: str
    help: str
    run: Handler


async def _help(ctl: ChatController, ui: ChatUI, arg: str) -> None:
    ui.rows("Commands", [(f"/{c.name} {c.args}".rstrip(), c.help) for c in COMMANDS.values()])
    ui.rows("Keys", KEYS_HELP)
    ui.info("//text sends /text as a prompt; /<skill-name> [request] asks the model to use a skill")


async def _exit(ctl: ChatController, ui: ChatUI, arg: str) -> CommandOutcome:
    return CommandOutcome(exit=True)


async def _new(ctl: ChatController, ui: ChatUI, arg: str) -> None:
    session = ctl.new_session()
    ui.info(f"new session {session} (model {ctl.model}, thinking {ctl.thinking})")


async def _resume(ctl: ChatController, ui: ChatUI, arg: str) -> CommandOutcome | None:
    sessions = await ctl.sessions.list()
    choice = arg.strip()
    if not choice:
        if not sessions:
            ui.info(f"no sessions yet in {ctl.opened.sessions_dir}")
            return None
        options = [(s.session, f"{s.session}  {format_age(s.modified)}  {s.first_prompt}") for s in sessions]
        picked = await ui.choose("Resume which session? (number or id)", options)
        if picked is None:
            return None
        choice = picked
    if choice.isdigit() and 1 <= int(choice) <= len(sessions) and choice not in {s.session for s in sessions}:
        choice = sessions[int(choice) - 1].session
    info = await ctl.resume(choice)
    ui.info(f"resumed session {info.session}: {info.messages} messages (model {ctl.model})")
    if info.last_prompt or info.last_answer:
        ui.show_session(info.last_prompt, info.last_answer)
    return None


async def _tools(ctl: ChatController, ui: ChatUI, arg: str) -> None:
    tools = ctl.opened.tools()
    if not tools:
        ui.info("this agent has no tools")
        return
    rows = []
    for tool in tools:
        summary = (tool.description.strip().splitlines() or [""])[0]
        rows.append((tool.name + (" (deferred)" if tool.deferred else ""), one_line(summary, 80)))
    ui.rows(f"Tools ({len(tools)})", rows)


async def _skills(ctl: ChatController, ui: ChatUI, arg: str) -> None:
    skills = await asyncio.to_thread(list_skills, ctl.opened)
    if not skills:
        ui.info(f"this agent has no skills ({ctl.opened.agent_dir / 'skills'}/<name>/SKILL.md)")
        return
    ui.rows(f"Skills ({len(skills)}; /<name> [request] uses one)", [(s.name, s.description) for s in skills])


async def _session(ctl: ChatController, ui: ChatUI, arg: str) -> None:
    info = await ctl.info()
    state = f"{info.entries} entries, {info.messages} messages" if info.exists else "not written yet"
    where = info.path or ("(in memory)" if info.exists else "(created by the first turn)")
    rows = [("id", info.session), ("file", str(where)), ("entries", state)]
    rows += [("model", ctl.model), ("thinking", ctl.thinking)]
    ui.rows("Session", rows)


async def _copy(ctl: ChatController, ui: ChatUI, arg: str) -> CommandOutcome | None:
    if not ctl.last_answer:
        ui.info("nothing to copy yet (no answer in this chat)")
        return None
    ui.info("copied " + await copy_text(ctl.last_answer, ui.terminal_writer()))
    return None


async def _expand(ctl: ChatController, ui: ChatUI, arg: str) -> None:
    index = None
    if arg.strip():
        if not arg.strip().lstrip("#").isdigit():
            raise UsageError("usage: /expand [n] (n is the #number on a tool line)")
        index = int(arg.strip().lstrip("#"))
    record = ctl.tools.get(index)
    if record is None:
        raise UsageError("no tool calls yet" if not ctl.tools.records else f"no tool call #{index}")
    ui.tool_output(record)


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("help", "", "commands and keys", _help),
        Command("new", "", "start a new session (model and thinking carry over)", _new),
        Command("resume", "[n|id]", "resume one of this agent's sessions", _resume),
        _shared(SHARED["model"]),
        _shared(SHARED["thinking"]),
        _shared(SHARED["thinking-display"]),
        Command("tools", "", "list the agent's tools", _tools),
        Command("skills", "", "list the agent's skills", _skills),
        Command("session", "", "session id, file and entry count", _session),
        _shared(SHARED["compact"]),
        _shared(SHARED["navigate"]),
        Command("expand", "[n]", "show the output of the last (or #n) tool call", _expand),
        Command("copy", "", "copy the last answer to the clipboard", _copy),
        _shared(SHARED["attach"]),
        Command("exit", "", "leave the chat (also /quit, Ctrl+D)", _exit),
    )
}
ALIASES = {"quit": "exit", "q": "exit", "clear": "new", "?": "help"}


async def dispatch(ctl: ChatController, ui: ChatUI, line: str) -> CommandOutcome:
    """Run the slash command in ``line`` (which starts with ``/``)."""
    name, _, arg = line[1:].partition(" ")
    name = name.strip()
    if "\n" in name:
        name, _, rest = name.partition("\n")
        arg = rest + (" " + arg if arg else "")
    command = COMMANDS.get(ALIASES.get(name, name))
    try:
        if command is not None:
            return await command.run(ctl, ui, arg) or CommandOutcome()
        skills = await asyncio.to_thread(list_skills, ctl.opened)
        skill = next((s for s in skills if s.name == name), None)
        if skill is not None:
            return CommandOutcome(send=skill_prompt(skill, arg))
        raise UsageError(f"unknown command /{name} (see /help; //text sends /text as a prompt)")
    except FastagentError as exc:
        ui.error(exc.message)
        return CommandOutcome(ok=False)
