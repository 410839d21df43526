"""``fastagent invoke <message> [dir]``: one turn, for scripts and CI.

The answer streams to stdout (newline at the end); the session id (``[fastagent] session: <id>``),
tool lines, retries, warnings about broken definition files and failures go to stderr. On a
terminal the answer is rendered as Markdown (:mod:`~fastagent_cli.cli.answer_view`); a pipe, a
file or ``--raw`` gets it as the model wrote it. ``--json``
prints every event as one JSON line on stdout instead, after a first line
``{"type": "session", "session": <id>, "model": <spec>}``. A compaction during the turn is a
stderr note (``[fastagent] compacting the conversation (N tokens)...`` and its result), with
``--json`` its ``compaction_started`` / ``compaction_finished`` events as JSON lines (the session
events' data under their ``type``). Exit 1 iff the turn failed.

``--schema FILE|JSON|'name str, age int'`` (default: the agent's ``[output] schema``) asks for a
structured answer: stdout gets the validated JSON object alone (``--json``: in
``completed.data.output``); no valid object (``failed{code: invalid_output}``) is exit 1. Without
``--session`` or ``--continue`` every call is a fresh session. Nobody is asked about tool
approvals: ``--approve`` answers them (:mod:`~fastagent_cli.cli.invoke_approvals`). Stdout
carries nothing else: what a tool prints (or a process it starts) goes to stderr.

An explicit ``--model`` runs this turn and becomes the session's model (a ``model_change`` entry),
so the header always names the model that runs: the session's own model when it has one.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

import click

from fastagent_cli.cli.common import (
    auth_path_option,
    claim_stdout,
    dir_argument,
    model_option,
    run_async,
    say,
    sessions_dir_option,
)
from fastagent_cli.cli.help_text import examples
from fastagent_cli.cli.invoke_approvals import APPROVE_HELP, approver
from fastagent_cli.contract import DocumentRef, ImageRef, Prompt
from fastagent_cli.errors import FastagentError, UsageError

if TYPE_CHECKING:
    from fastagent_cli.assembly import OpenedAgent
    from fastagent_cli.contract import ToolEnded, ToolStarted
    from fastagent_cli.control import SessionEvent, SessionEventStream

__all__ = ["invoke", "say_findings", "stream_turn"]


def _read_message(message: str | None) -> str:
    if message is None or message == "-":
        if message is None and sys.stdin.isatty():
            raise UsageError("missing MESSAGE (pass text, or - to read stdin)")
        return sys.stdin.read()
    return message


def _check_order(message: str | None, directory: str) -> None:
    """``invoke demo "Hello"``: the directory does not exist and the message is one."""
    if message is None or directory == "." or os.path.exists(os.path.expanduser(directory)):
        return
    if os.path.isdir(os.path.expanduser(message)):
        raise UsageError(
            f"no such directory: {directory}; MESSAGE comes first, then DIR: "
            f"fastagent invoke {_quoted(directory)} {_quoted(message)}"
        )


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


@click.command(epilog=examples("invoke"))
@click.argument("message", required=False)
@dir_argument
@model_option
@click.option("-s", "--session", help="Session id to continue (default: a fresh session per call).")
@click.option(
    "-c", "--continue", "continue_last", is_flag=True, help="Continue this agent's most recent session."
)
@click.option("-j", "--json", "as_json", is_flag=True, help="Print every event as one JSON line on stdout.")
@click.option("--raw", is_flag=True, help="Print the answer as the model wrote it (no Markdown rendering).")
@click.option(
    "--attach",
    "attach_paths",
    multiple=True,
    metavar="FILE",
    help="Attach an image (fitted to 1568 px, 5 MB), a PDF (a document, or its text for a model that takes "
    "none) or a text file (added to the message). Repeatable.",
)
@click.option(
    "--schema",
    "schema_text",
    metavar="FILE|JSON|FIELDS",
    help="Answer with a JSON object matching this JSON Schema (a file, inline JSON, or 'name str, age int').",
)
@sessions_dir_option
@auth_path_option
@click.option("--no-input", is_flag=True, help="Never prompt (fail instead).")
@click.option("--approve", "approve", default="none", metavar="all|none|TOOL,...", help=APPROVE_HELP)
def invoke(
    message: str | None,
    directory: str,
    model: str | None,
    session: str | None,
    continue_last: bool,
    as_json: bool,
    raw: bool,
    attach_paths: tuple[str, ...],
    schema_text: str | None,
    sessions_dir: str | None,
    auth_path: str | None,
    no_input: bool,
    approve: str,
) -> None:
    """Run one turn of the agent in DIR (default .) and print the answer.

    MESSAGE may be - to read the prompt from stdin. The session id is printed on stderr; continue
    it with --session ID, or --continue for the agent's most recent session.
    """
    if session is not None and continue_last:
        raise UsageError("--session and --continue are mutually exclusive")
    if session is not None and not session.strip():
        raise UsageError("--session needs a non-empty id")
    _check_order(message, directory)
    answer = approver(approve)  # a bad value is a usage error before anything runs
    text = _read_message(message)
    if not text.strip():
        raise UsageError("the message is empty")
    images: tuple[ImageRef, ...] = ()
    documents: tuple[DocumentRef, ...] = ()
    if attach_paths:
        from fastagent_cli.assembly.attachments import read_attachments

        attached = read_attachments(attach_paths)
        text, images, documents = text + attached.text, attached.images, attached.documents
    schema = None
    if schema_text is not None:
        from fastagent_cli.models.structured import parse_schema

        schema = parse_schema(schema_text)
    from fastagent_cli.assembly import open_agent
    from fastagent_cli.cli.model_picker import read_agent

    surface = read_agent(
        directory, model=model, sessions_dir=sessions_dir, auth_path=auth_path, no_input=no_input
    )
    out = claim_stdout()  # from here on, only the answer (or the events) reaches stdout
    if schema is None:
        schema = surface.config.output.resolve(surface.agent_dir)
    opened = open_agent(surface)
    opened.answer_approvals(answer, f"invoke --approve {approve}")
    say_findings(opened)
    markdown = not (as_json or raw or schema) and out.isatty()  # a pipe or a file gets the text as written
    prompt = Prompt(text, images, schema, documents)
    ok = run_async(_invoke(opened, session, continue_last, prompt, as_json, out, markdown))
    if not ok:
        raise SystemExit(1)


def say_findings(opened: OpenedAgent) -> None:
    """Warn on stderr about what the agent lacks (a tool file that failed, a broken skill, ...), as
    ``start`` and ``info`` do: the model would otherwise silently miss it."""
    for finding in opened.findings():
        say(f"[fastagent] warn: {finding.message}")
    if opened.placement.hint:
        say(opened.placement.hint)


async def _invoke(
    opened: OpenedAgent,
    session: str | None,
    continue_last: bool,
    prompt: Prompt,
    as_json: bool,
    out: TextIO,
    markdown: bool,
) -> bool:
    try:
        chosen = await _choose_session(opened, session, continue_last)
        spec = await _settle_model(opened, chosen)
    except BaseException:
        await opened.aclose()
        raise
    if not as_json:
        say(f"[fastagent] invoke: {opened.agent_dir} (workspace {opened.workspace}, {spec})")
    say(f"[fastagent] session: {chosen}")
    return await stream_turn(opened, chosen, prompt, as_json, out, model=spec, markdown=markdown)


async def _choose_session(opened: OpenedAgent, session: str | None, continue_last: bool) -> str:
    if session is not None:
        return session
    if continue_last:
        latest = await opened.sessions.list(1)
        if latest:
            return latest[0].session
        say(f"[fastagent] no sessions yet in {opened.sessions_dir}: starting a new one")
    return str(uuid.uuid4())


async def _settle_model(opened: OpenedAgent, session: str) -> str:
    """The model this turn runs: an explicit ``--model`` (recorded as the session's model), else
    the session's own, else the agent's."""
    if opened.model_source == "--model":
        return (await opened.sessions.pin_model(session, opened.model_spec)).spec
    try:
        view = await opened.sessions.read(session)
    except FastagentError:
        return opened.sessions.defaults().spec  # an unreadable record: the turn reports it
    return (view.settings if view is not None else opened.sessions.defaults()).spec


async def stream_turn(
    opened: OpenedAgent,
    session: str,
    prompt: Prompt | str,
    as_json: bool,
    out: TextIO | None = None,
    *,
    model: str | None = None,
    markdown: bool = False,
) -> bool:
    """Run one turn of the opened agent (closed at the end) the way ``invoke`` shows it: the
    answer on ``out`` (default stdout), tool lines and failures on stderr (``as_json``: a
    ``session`` line, then every event as a JSON line on ``out``; ``markdown``: the answer
    rendered for a terminal; a prompt with ``output_schema``: its object alone on ``out``).
    Returns whether the turn completed (``fire`` shares it)."""
    import asyncio

    from fastagent_cli.contract import (
        Completed,
        Failed,
        Retrying,
        Scope,
        Text,
        ToolEnded,
        ToolStarted,
        closing,
        event_to_wire,
        json_text,
    )
    from fastagent_cli.control.compaction_notes import compaction_note

    out = out or sys.stdout
    if isinstance(prompt, str):
        prompt = Prompt(prompt)
    schema = prompt.output_schema
    if isinstance(out, io.TextIOWrapper):
        out.reconfigure(errors="backslashreplace")  # a lone surrogate in an answer prints as \udXXX
    from fastagent_cli.cli.first_token import FirstTokenProgress
    from fastagent_cli.logging_setup import drop_turn_failures

    drop_turn_failures()  # the failed event below says why, once
    tools = _ToolLines()
    view = None
    if markdown:
        from fastagent_cli.cli.answer_view import MarkdownAnswer

        view = MarkdownAnswer(out)
    ended_with_newline = True
    ok = cut_off = False
    progress = FirstTokenProgress(model or opened.model_spec or "the model")
    watcher: asyncio.Task[None] | None = None
    try:
        if as_json:
            head = {"type": "session", "session": session, "model": model or opened.model_spec}
            out.write(json_text(head) + "\n")  # compact, like every event line after it
            out.flush()

        def compaction(event: SessionEvent) -> None:
            nonlocal ended_with_newline
            if as_json:
                out.write(json_text({**event.data, "type": event.type}) + "\n")
                out.flush()
                return
            note = compaction_note(event)
            if note is not None:
                progress.stop()  # the counter's line is erased before the note
                if not ended_with_newline:  # the answer so far ends its line first
                    out.write("\n")
                    out.flush()
                    ended_with_newline = True
                say(f"[fastagent] {note}")

        subscription = opened.control.sessions.get(session).events()  # before the run: nothing missed
        watcher = asyncio.create_task(_watch_compaction(subscription, compaction))
        progress.start()  # on stderr, when it is a terminal, until the first event
        async with closing(opened.agent.invoke(Scope(session), prompt)) as events:
            async for event in events:
                progress.stop()
                if isinstance(event, Completed):
                    cut_off = isinstance(event.data, dict) and event.data.get("stopReason") == "length"
                if as_json:
                    out.write(event_to_wire(event) + "\n")
                    out.flush()
                    ok = ok or isinstance(event, Completed)
                    continue
                if isinstance(event, Text) and schema is not None:
                    continue  # progress only: the answer is the object the run settles with
                if isinstance(event, Completed) and schema is not None:
                    output = event.data.get("output") if isinstance(event.data, dict) else None
                    out.write(json.dumps(output, ensure_ascii=False, indent=2) + "\n")
                    ok = True
                    continue
                if isinstance(event, Text) and view is not None:
                    view.write(event.delta)
                    continue
                if view is not None and isinstance(event, ToolStarted | ToolEnded | Retrying | Failed):
                    view.pause()  # the line goes below the text so far, the rest of the text after it
                if isinstance(event, Text):
                    out.write(event.delta)
                    out.flush()
                    ended_with_newline = event.delta.endswith("\n")
                elif isinstance(event, ToolStarted):
                    say(tools.started(event))
                elif isinstance(event, ToolEnded) and event.is_error:
                    say(tools.failed(event))
                elif isinstance(event, Retrying):
                    say(
                        f"[fastagent] transient failure — retrying ({event.attempt}/{event.max_attempts} "
                        f"in {event.delay_ms}ms): {event.reason}"
                    )
                    progress.start()  # waiting again
                elif isinstance(event, Completed):
                    ok = True
                elif isinstance(event, Failed):
                    suffix = " (retryable)" if event.retryable else ""
                    if not ended_with_newline:
                        out.write("\n")
                        ended_with_newline = True
                    say(f"[fastagent] failed: {event.details}{suffix}")
        if view is not None:
            view.pause()
        if not as_json and not ended_with_newline:
            out.write("\n")
        out.flush()
        if cut_off:
            say(CUT_OFF_NOTE)
    finally:
        progress.stop()
        if view is not None:
            view.pause()  # idempotent: a failure or Ctrl+C still ends the live region (and its cursor)
        if watcher is not None:
            # It ends at the run's run_settled, published before the terminal: it only has the
            # buffered events left to show (a turn refused as busy had no run: it is stopped).
            await asyncio.wait({watcher}, timeout=_WATCH_DRAIN_S)
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        await opened.aclose()
    return ok


class _ToolLines:
    """``[tool] read path=notes.md`` when a call starts; ``[tool] read path=notes.md ✗ 12ms: <why>``
    when it fails: the facts of chat's tool line (name, arguments, duration, the error) on one
    line each. A call that succeeds adds nothing (the answer follows)."""

    def __init__(self) -> None:
        self._calls: dict[str, tuple[str, float]] = {}

    def started(self, event: ToolStarted) -> str:
        from fastagent_cli.chat.tool_lines import summarize_args

        summary = summarize_args(event.args)
        head = f"{event.name} {summary}" if summary else event.name
        self._calls[event.id] = (head, time.monotonic())
        return f"[tool] {head}"

    def failed(self, event: ToolEnded) -> str:
        from fastagent_cli.chat.tool_lines import content_text, format_duration

        head, started = self._calls.get(event.id, (event.id, time.monotonic()))
        reason = " ".join(content_text(event.content).split())
        if len(reason) > _REASON_LIMIT:
            reason = reason[: _REASON_LIMIT - 1] + "…"
        took = format_duration(time.monotonic() - started)
        return f"[tool] {head} ✗ {took}: {reason or '(no error text)'}"


_REASON_LIMIT = 300


_WATCH_DRAIN_S = 0.5


async def _watch_compaction(events: SessionEventStream, show: Callable[[SessionEvent], None]) -> None:
    """Hand the compaction events of the session's run to ``show``, until its ``run_settled``."""
    from fastagent_cli.control import SessionEventsClosed
    from fastagent_cli.control.compaction_notes import COMPACTION_EVENTS

    try:
        async for event in events:
            if event.type in COMPACTION_EVENTS:
                show(event)
            elif event.type == "run_settled":
                return
    except SessionEventsClosed:
        pass
    finally:
        await events.aclose()


CUT_OFF_NOTE = (
    "[fastagent] note: the answer was cut off: it reached the output token limit (the model's "
    "maxTokens, or what its context window left)"
)
