"""What a line typed in ``attach`` does: a message (a new run, or a steer / follow-up of the run
shown), a command of chat's shared table (``/model``, ``/thinking``, ``/compact``, ``/navigate``,
``/attach``, ``/thinking-display``: :mod:`fastagent_cli.chat.session_commands`, on
:class:`~.ops.RemoteOps`), or attach's own (``/abort``, ``/commands``, ``/help``, ``/detach``).

Files ``/attach`` added (or a pasted image or PDF path) go with the next message, as the
contract's images and documents (``POST /control/invoke``'s ``images`` and ``documents``, or a
steer's ``prompt.images`` and ``prompt.documents``) and text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol

from fastagent_cli.chat.attach.ops import RemoteOps
from fastagent_cli.chat.composer import ActionKind
from fastagent_cli.chat.run_actions import abort_run, send_to_run
from fastagent_cli.chat.session_commands import SHARED, SharedUI
from fastagent_cli.chat.session_link import SessionLink
from fastagent_cli.contract import Failed, Prompt, Scope
from fastagent_cli.errors import ControlRequestError, FastagentError, one_line
from fastagent_cli.remote import REQUEST_FAILED

__all__ = ["KEYS", "AttachActions"]

KEYS = (
    "Enter sends (a new run; while a run streams, steers it) · Alt+Enter newline, or queues a "
    "follow-up while a run streams · /abort · /commands · /help · Ctrl+C detaches"
)
RESERVED = "a leading / is a command (/help lists them); //text sends /text"
OWN = [
    ("/abort", "stop the active run"),
    ("/commands", "list the agent's skills"),
    ("/detach", "leave (also Ctrl+C, Ctrl+D on an empty prompt); a run attach started is cancelled"),
]


class Host(Protocol):
    """What the actions need of the attach screen."""

    @property
    def link(self) -> SessionLink: ...

    session: str
    ops: RemoteOps

    def printing(self) -> AbstractAsyncContextManager[None]: ...

    @property
    def run_shown(self) -> bool: ...

    def request_detach(self) -> None: ...


class AttachActions:
    def __init__(self, host: Host, ui: SharedUI, note: Callable[[str, str], None]) -> None:
        self.host = host
        self.ui = ui
        self._note = note
        self.tasks: set[asyncio.Task[Any]] = set()
        self.own_runs: set[asyncio.Task[None]] = set()
        """Runs this attach started (their invoke streams drive them: a detach cancels them)."""

    def line(self, text: str, kind: ActionKind | Literal["line"]) -> None:
        stripped = text.strip()
        if not stripped:
            return
        if stripped.startswith("/") and not stripped.startswith("//"):
            word, _, arg = stripped[1:].partition(" ")
            if "\n" in word:
                word, _, rest = word.partition("\n")
                arg = rest + (" " + arg if arg else "")
            if word == "abort":
                self._spawn(self._abort())
            elif word == "commands":
                self._spawn(self._commands(None))
            elif word in ("help", "?"):
                self._spawn(self._help())
            elif word in ("detach", "exit", "quit"):
                self.host.request_detach()
            elif word in SHARED:
                self._spawn(self._shared(word, arg))
            else:
                self._spawn(self._commands(word))
            return
        if stripped.startswith("//"):
            text = stripped[1:]
        self._spawn(self._send(text.strip(), kind))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def say(self, text: str, style: str = "cyan") -> None:
        async with self.host.printing():
            self._note(text, style)

    async def _shared(self, word: str, arg: str) -> None:
        if word in ("model", "navigate") and not arg.strip() and self.host.run_shown:
            await self.say(f"✗ no picker while a run streams: /{word} {SHARED[word].args}", "red")
            return
        async with self.host.printing():
            try:
                await SHARED[word].run(self.host.ops, self.ui, arg)
            except FastagentError as exc:
                self.ui.error(exc.message)

    async def _help(self) -> None:
        async with self.host.printing():
            commands = [(f"/{c.name} {c.args}".rstrip(), c.help) for c in SHARED.values()]
            self.ui.rows("Commands", [*commands, *OWN])
            self.ui.info(KEYS)

    # --- messages -------------------------------------------------------------------------------

    async def _send(self, text: str, kind: ActionKind | Literal["line"]) -> None:
        control = self.host.link.control
        if control is None:
            await self.say(f"✗ not connected (reconnecting): not sent: {one_line(text, 60)}", "red")
            return
        prompt = self.host.ops.attachments.prompt(text)
        if kind == "line" and not self.host.run_shown:
            self._start_run(prompt)
            return
        session = control.sessions.get(self.host.session)
        sent = await send_to_run(session, prompt, "follow_up" if kind == "follow_up" else "steer")
        if sent.late:
            self._start_run(prompt)  # the run ended first: the text starts the next one
        elif sent.refused is not None:
            await self.say(f"✗ {sent.refused}", "red")

    def _start_run(self, prompt: Prompt) -> None:
        task = asyncio.create_task(self._drive(prompt))
        self.own_runs.add(task)
        task.add_done_callback(self.own_runs.discard)

    async def _drive(self, prompt: Prompt) -> None:
        """Start a run with ``prompt`` and hold its invoke stream (the run's driver) to its end;
        the run itself is shown from the session's events."""
        agent = self.host.link.agent
        if agent is None:
            await self.say("✗ not connected (reconnecting)", "red")
            return
        failure: Failed | None = None
        async for event in agent.invoke(Scope(self.host.session), prompt):
            if isinstance(event, Failed):
                failure = event
        if failure is None:
            return
        control = self.host.link.control
        if failure.code == "session_busy" and control is not None:  # a run started meanwhile: join it
            result = await control.sessions.get(self.host.session).steer(prompt)
            if not result.ok and result.error is not None:
                await self.say(f"✗ the session is busy and took nothing: {result.error.message}", "red")
        elif failure.code == REQUEST_FAILED:  # the run's own failures arrive as its events
            await self.say(f"✗ {failure.details}", "red")

    # --- attach's own commands ------------------------------------------------------------------

    async def _abort(self) -> None:
        control = self.host.link.control
        if control is None:
            await self.say("✗ not connected (reconnecting)", "red")
            return
        await self.say(*await abort_run(control.sessions.get(self.host.session)))

    async def _commands(self, asked: str | None) -> None:
        """``/commands`` (``asked`` is None) or an unknown ``/word`` (a skill's name, or a typo)."""
        control = self.host.link.control
        try:
            commands = list(await control.commands()) if control is not None else []
        except ControlRequestError as exc:
            await self.say(f"✗ the command list is unavailable: {exc.message}", "red")
            return
        async with self.host.printing():
            if asked is None:
                if not commands:
                    self._note("this agent defines no skills", "cyan")
                for command in commands:
                    about = f" — {command.description}" if command.description else ""
                    self._note(f"/{command.name}{about}  ({command.source})", "cyan")
                return
            hit = next((c for c in commands if c.name == asked), None)
            if hit is not None:
                self._note(f"{hit.name} is a {hit.source}: name it in a message, without the /", "cyan")
            self._note(RESERVED, "yellow")
