"""``fastagent chat [dir]``: talk to the agent in the terminal.

Opens the same assembled agent that ``dev`` / ``start`` serve and the same session store, and
drives every turn through ``agent.invoke``. With stdin or stdout not a terminal it reads prompts
line by line and prints plain text (see :mod:`fastagent_cli.chat.plain`). ``--json`` is the
streaming NDJSON mode (:mod:`fastagent_cli.chat.stream`): each stdin line is a message as it
arrives, lines arriving during a run coalesce into one follow-up turn, every event is a JSON line.
"""

from __future__ import annotations

import sys

import click

from fastagent_cli.cli.common import (
    auth_path_option,
    claim_stdout,
    dir_argument,
    model_option,
    run_async,
    sessions_dir_option,
)
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import UsageError

__all__ = ["chat"]


@click.command(epilog=examples("chat"))
@dir_argument
@model_option
@click.option(
    "-s", "--session", help="Session id to open (created if new); resumable later and by the server."
)
@click.option(
    "-c", "--continue", "continue_last", is_flag=True, help="Continue this agent's most recent session."
)
@click.option("--resume", is_flag=True, help="Pick one of this agent's sessions to resume.")
@sessions_dir_option
@auth_path_option
@click.option("--no-input", is_flag=True, help="Never ask anything before the chat starts (fail instead).")
@click.option(
    "-j",
    "--json",
    "as_json",
    is_flag=True,
    help="Stream mode for programs: each stdin line is a message as it arrives (lines arriving "
    "during a run join it as one follow-up turn); every event is one JSON line on stdout.",
)
def chat(
    directory: str,
    model: str | None,
    session: str | None,
    continue_last: bool,
    resume: bool,
    sessions_dir: str | None,
    auth_path: str | None,
    no_input: bool,
    as_json: bool,
) -> None:
    """Chat with the agent in DIR (default .).

    Enter sends, Alt+Enter or Ctrl+J inserts a newline, Ctrl+C interrupts a turn, Ctrl+D exits;
    /help lists the commands. Without a terminal, each stdin line is one prompt; with --json,
    each stdin line is a message as it arrives and every event is a JSON line (NDJSON).
    """
    if sum(bool(x) for x in (session, continue_last, resume)) > 1:
        raise UsageError("--session, --continue and --resume are mutually exclusive")
    if session is not None and not session.strip():
        raise UsageError("--session needs a non-empty id")
    interactive = sys.stdin.isatty() and sys.stdout.isatty() and not as_json
    if resume and (no_input or not interactive):
        raise UsageError("--resume picks a session interactively: use --session ID or --continue")

    from fastagent_cli.assembly import open_agent
    from fastagent_cli.chat.launch import SessionChoice, launch
    from fastagent_cli.cli.model_picker import read_agent

    surface = read_agent(
        directory, model=model, sessions_dir=sessions_dir, auth_path=auth_path, no_input=no_input
    )
    # Without a terminal, stdout carries the answers only: what a tool prints goes to stderr.
    out = None if interactive else claim_stdout()
    opened = open_agent(surface)
    if not interactive:
        # The terminal chat asks (y/n/a under the run); without a terminal nobody can answer: a
        # call that needs approval is denied (its tool line says so) rather than waiting forever.
        opened.answer_approvals(lambda tool: "deny", "chat without a terminal")
    from fastagent_cli.logging_setup import drop_turn_failures

    drop_turn_failures()  # the chat shows each failed turn itself, once
    choice = SessionChoice(session, continue_last, resume)
    code = run_async(launch(opened, choice, interactive=interactive, as_json=as_json, stdout=out))
    if code:
        raise SystemExit(code)
