"""Starting a chat on an opened agent: which session (new, ``--session``, ``--continue``,
``--resume``) and which mode (terminal or plain)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from fastagent_cli.assembly import OpenedAgent
from fastagent_cli.chat.controller import ChatController
from fastagent_cli.chat.sessions_list import format_age
from fastagent_cli.errors import UsageError

__all__ = ["HISTORY_NAME", "SessionChoice", "launch"]

HISTORY_NAME = "chat_history"


@dataclass(frozen=True, slots=True)
class SessionChoice:
    session: str | None = None
    continue_last: bool = False
    resume: bool = False


async def _pick_session(opened: OpenedAgent, choice: SessionChoice, interactive: bool) -> str | None:
    if choice.session:
        return choice.session
    if not (choice.continue_last or choice.resume):
        return None
    sessions = await opened.sessions.list()
    if not sessions:
        sys.stderr.write(f"[chat] no sessions yet in {opened.sessions_dir}: starting a new one\n")
        return None
    if choice.continue_last:
        return sessions[0].session
    if not interactive:
        raise UsageError("--resume picks a session interactively: use --session ID or --continue")
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter

    for i, summary in enumerate(sessions, 1):
        sys.stdout.write(
            f"{i:>3}  {summary.session}  {format_age(summary.modified)}  {summary.first_prompt}\n"
        )
    picker: PromptSession[str] = PromptSession()
    try:
        answer = await picker.prompt_async(
            "Resume which session? (number or id, Enter for a new one) ",
            completer=WordCompleter([s.session for s in sessions], match_middle=True),
        )
    except (EOFError, KeyboardInterrupt):
        return None
    answer = answer.strip()
    if answer.isdigit() and 1 <= int(answer) <= len(sessions):
        return sessions[int(answer) - 1].session
    return answer or None


async def launch(
    opened: OpenedAgent,
    choice: SessionChoice,
    *,
    interactive: bool,
    as_json: bool = False,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    try:
        session = await _pick_session(opened, choice, interactive)
        if as_json:
            from fastagent_cli.chat.stream import run_json

            out, err = stdout or sys.stdout, stderr or sys.stderr
            return await run_json(opened, session, stdin or sys.stdin, out, err)
        ctl = ChatController(opened, session)
        if session is not None and choice.session is None:
            await ctl.resume(session)  # a picked or continued session must exist
        if opened.model_source == "--model":
            await ctl.pin_model(opened.model_spec)  # it wins over the session's own model
        if not interactive:
            from fastagent_cli.chat.plain import run_plain

            return await run_plain(ctl, stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr)
        from fastagent_cli.chat.app import SessionApp
        from fastagent_cli.chat.chat_side import ChatSide

        app = SessionApp(ChatSide(ctl), history_path=opened.state_root / HISTORY_NAME)
        return await app.run()
    finally:
        await opened.aclose()
