"""``fastagent invoke <message> [dir]``: one turn, for scripts and CI.

The answer streams to stdout (newline at the end); tool lines, retries and failures go to stderr;
``--json`` prints every event as one JSON line on stdout instead. Exit 1 iff the turn failed.
Without ``--session`` every call is a fresh session.
"""

from __future__ import annotations

import io
import sys
import uuid
from typing import TYPE_CHECKING

import click

from fastagent_cli.cli.common import (
    auth_path_option,
    dir_argument,
    model_option,
    run_async,
    say,
    sessions_dir_option,
)
from fastagent_cli.errors import UsageError

if TYPE_CHECKING:
    from fastagent_cli.assembly import OpenedAgent

__all__ = ["invoke", "stream_turn"]


def _read_message(message: str | None) -> str:
    if message is None or message == "-":
        if message is None and sys.stdin.isatty():
            raise UsageError("missing MESSAGE (pass text, or - to read stdin)")
        return sys.stdin.read()
    return message


@click.command()
@click.argument("message", required=False)
@dir_argument
@model_option
@click.option("--session", help="Session id to continue (default: a fresh session per call).")
@click.option("--json", "as_json", is_flag=True, help="Print every event as one JSON line on stdout.")
@sessions_dir_option
@auth_path_option
@click.option("--no-input", is_flag=True, help="Never prompt (fail instead).")
def invoke(
    message: str | None,
    directory: str,
    model: str | None,
    session: str | None,
    as_json: bool,
    sessions_dir: str | None,
    auth_path: str | None,
    no_input: bool,
) -> None:
    """Run one turn of the agent in DIR (default .) and print the answer.

    MESSAGE may be - to read the prompt from stdin.
    """
    text = _read_message(message)
    if not text.strip():
        raise UsageError("the message is empty")
    from fastagent_cli.assembly import open_agent
    from fastagent_cli.cli.model_picker import read_agent

    surface = read_agent(
        directory, model=model, sessions_dir=sessions_dir, auth_path=auth_path, no_input=no_input
    )
    opened = open_agent(surface)
    if not as_json:
        say(f"[fastagent] invoke: {opened.agent_dir} (workspace {opened.workspace}, {opened.model_spec})")
    if opened.placement.hint:
        say(opened.placement.hint)
    ok = run_async(stream_turn(opened, session or str(uuid.uuid4()), text, as_json))
    if not ok:
        raise SystemExit(1)


async def stream_turn(opened: OpenedAgent, session: str, text: str, as_json: bool) -> bool:
    """Run one turn of the opened agent (closed at the end) the way ``invoke`` shows it: the
    answer on stdout, tool lines and failures on stderr (``as_json``: every event as a JSON line on
    stdout). Returns whether the turn completed (``fire`` shares it)."""
    from fastagent_cli.contract import (
        Completed,
        Failed,
        Prompt,
        Retrying,
        Scope,
        Text,
        ToolEnded,
        ToolStarted,
        closing,
        event_to_wire,
    )

    out = sys.stdout
    if isinstance(out, io.TextIOWrapper):
        out.reconfigure(errors="backslashreplace")  # a lone surrogate in an answer prints as \udXXX
    names: dict[str, str] = {}
    ended_with_newline = True
    ok = False
    try:
        async with closing(opened.agent.invoke(Scope(session), Prompt(text))) as events:
            async for event in events:
                if as_json:
                    out.write(event_to_wire(event) + "\n")
                    out.flush()
                    ok = ok or isinstance(event, Completed)
                    continue
                if isinstance(event, Text):
                    out.write(event.delta)
                    out.flush()
                    ended_with_newline = event.delta.endswith("\n")
                elif isinstance(event, ToolStarted):
                    names[event.id] = event.name
                    say(f"[tool] {event.name}")
                elif isinstance(event, ToolEnded) and event.is_error:
                    say(f"[tool] {names.get(event.id, event.id)} failed")
                elif isinstance(event, Retrying):
                    say(
                        f"[fastagent] transient failure — retrying ({event.attempt}/{event.max_attempts} "
                        f"in {event.delay_ms}ms): {event.reason}"
                    )
                elif isinstance(event, Completed):
                    ok = True
                elif isinstance(event, Failed):
                    suffix = " (retryable)" if event.retryable else ""
                    if not ended_with_newline:
                        out.write("\n")
                        ended_with_newline = True
                    say(f"[fastagent] failed: {event.details}{suffix}")
        if not as_json and not ended_with_newline:
            out.write("\n")
            out.flush()
    finally:
        await opened.aclose()
    return ok
