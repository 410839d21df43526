"""``fastagent sessions list|show|export|import``: the agent's stored conversations.

* ``list [dir] [--json] [--limit N]``: newest first, one line each: id, name, when it was last
  written, message count, tokens and cost (from the usage ledger), first prompt. ``--json``
  prints ``{sessions: [{session, name, createdAt, updatedAt, messageCount, preview, path,
  usage}], total}`` (``usage``: ``{requests, inputTokens, outputTokens, cacheReadTokens,
  cacheWriteTokens, totalTokens, cost}`` or ``null``).
* ``show <id> [dir]``: the conversation on its active path, as text, with the session's usage
  totals. An id may be shortened to any prefix that names one session.
* ``export <id> [dir] [--format jsonl|md] [-o FILE]``: the record as pi's JSONL (its bytes as
  stored, which the original and pi open as they are) or as Markdown; ``-o`` writes a file
  (0600), else stdout; a Markdown file gets its images and documents (PDFs) in
  ``<name>.files/`` next to it, linked from it (:mod:`fastagent_cli.cli.export_files`).
* ``import <source> [dir] [--session ID | --all] [--as ID | --new-id] [--json]``: a record file
  (the original's, pi's, another agent's), a sessions directory (pi's ``~/.pi/agent/sessions``)
  or another agent directory; stored under its own id unless ``--as`` / ``--new-id`` says.

Each reads and writes where the agent keeps its state: the files, or with ``state_backend =
"postgres"`` (or ``FASTAGENT_DATABASE_URL``) the shared database, which an unreachable database
makes one ``Error:`` line and exit 1. None needs a model. Every bad input is one ``Error:``
line: exit 2 for usage (a missing source, clashing options, an unknown format), 1 for the rest
(no such session, a file that is not a session record, an id that is taken).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from fastagent_cli.cli.common import dir_argument, run_async, say, sessions_dir_option
from fastagent_cli.cli.completers import session_ids
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import DatabaseError, FastagentError, SessionError, UsageError

if TYPE_CHECKING:
    from fastagent_cli.assembly import ForeignRecord, SessionArchive, SessionSummary, StoredSession
    from fastagent_cli.state.usage import UsageTotals

__all__ = ["list_document", "list_lines", "sessions"]

_FORMATS = {"jsonl": "jsonl", "md": "md", "markdown": "md"}
T = TypeVar("T")


@click.group(epilog=examples("sessions"))
def sessions() -> None:
    """List, show, export and import stored sessions."""


def _archive(directory: str, sessions_dir: str | None) -> SessionArchive:
    from fastagent_cli.assembly import open_session_archive
    from fastagent_cli.logging_setup import configure_logging

    configure_logging("warn")  # a record that stays in the old layout says why
    return open_session_archive(directory, sessions_dir=sessions_dir)


def _on_archive(archive: SessionArchive, work: Callable[[], Awaitable[T]]) -> T:
    """``work`` on one event loop, the archive closed after it (a database's connections belong
    to the loop that opened them)."""

    async def run() -> T:
        try:
            return await work()
        finally:
            await archive.aclose()

    return run_async(run())


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def list_document(
    found: list[SessionSummary], total: int, usage: dict[str, UsageTotals] | None = None
) -> dict[str, Any]:
    totals = usage or {}
    return {
        "sessions": [
            {
                "session": s.session,
                "name": s.name,
                "createdAt": _iso(s.created) if s.created else None,
                "updatedAt": _iso(s.modified),
                "messageCount": s.message_count,
                "preview": s.preview,
                "path": None if s.path is None else str(s.path),
                "usage": totals[s.session].to_json() if s.session in totals else None,
            }
            for s in found
        ],
        "total": total,
    }


def list_lines(found: list[SessionSummary], usage: dict[str, UsageTotals] | None = None) -> list[str]:
    """The table; with ``usage`` (some session recorded any) a TOKENS and a COST column."""
    if not found:
        return []
    from fastagent_cli.cli.usage_view import format_cost, format_tokens

    totals = usage or {}
    id_width = min(40, max(len("ID"), *(len(s.session) for s in found)))
    names = [_clip(s.name or "", 24) for s in found]
    name_width = max(len("NAME"), *(len(n) for n in names)) if any(names) else 0
    spend = [
        (format_tokens(totals[s.session].tokens), format_cost(totals[s.session].cost))
        if s.session in totals
        else ("", "")
        for s in found
    ]
    rows = [("ID", "NAME", "UPDATED", "MSGS", "TOKENS", "COST", "PREVIEW")]
    for summary, name, (tokens, cost) in zip(found, names, spend, strict=True):
        updated = datetime.fromtimestamp(summary.modified).strftime("%Y-%m-%d %H:%M")
        rows.append(
            (summary.session, name, updated, str(summary.message_count), tokens, cost, summary.first_prompt)
        )
    token_width = max(len(r[4]) for r in rows)
    cost_width = max(len(r[5]) for r in rows)
    return [
        f"{session:<{id_width}}  "
        + (f"{name:<{name_width}}  " if name_width else "")
        + f"{updated:<16}  {count:>4}  "
        + (f"{tokens:>{token_width}}  {cost:>{cost_width}}  " if totals else "")
        + preview
        for session, name, updated, count, tokens, cost, preview in rows
    ]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@sessions.command("list", epilog=examples("sessions list"))
@dir_argument
@click.option("-j", "--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--limit", type=click.IntRange(min=0), default=30, show_default=True, help="How many (0: all).")
@sessions_dir_option
def list_command(directory: str, as_json: bool, limit: int, sessions_dir: str | None) -> None:
    """List stored sessions, most recently written first.

    Reads the agent in DIR (default .); the newest session is first, so `--limit 1` is the last.
    """
    archive = _archive(directory, sessions_dir)

    async def read() -> tuple[list[SessionSummary], int, dict[str, UsageTotals]]:
        found = await archive.list(limit or None)
        return found, await archive.count(), await archive.usage_totals([s.session for s in found])

    found, total, usage = _on_archive(archive, read)
    if as_json:
        click.echo(json.dumps(list_document(found, total, usage), indent=2, ensure_ascii=False))
        return
    for line in list_lines(found, usage):
        click.echo(line)
    if not found:
        say(f"no sessions yet in {archive.where}")
        elsewhere = archive.other_workspaces()
        if elsewhere:
            shown = ", ".join(f"{name} ({count})" for name, count in elsewhere)
            say(
                f"other workspaces' sessions are stored in {archive.sessions_dir}: {shown}; "
                f"bring them here with `fastagent sessions import {archive.sessions_dir / elsewhere[0][0]}`"
            )
    elif len(found) < total:
        say(f"({len(found)} most recent of {total}; --limit 0 lists them all)")


@sessions.command("show", epilog=examples("sessions show"))
@click.argument("session", metavar="ID", shell_complete=session_ids)
@dir_argument
@sessions_dir_option
def show_command(session: str, directory: str, sessions_dir: str | None) -> None:
    """Show session ID as text: the conversation a next turn continues.

    ID may be any prefix that names one session; DIR is the agent (default .).
    """
    from fastagent_cli.cli.transcript import text

    archive = _archive(directory, sessions_dir)

    async def read() -> tuple[StoredSession | None, UsageTotals | None]:
        found = await archive.resolve(session)
        return await archive.read(found), (await archive.usage_totals([found])).get(found)

    stored, usage = _on_archive(archive, read)
    if stored is None:
        raise SessionError(f"session {session!r} went away while it was being read")
    click.echo(text(stored, usage), nl=False)


@sessions.command(
    "export",
    epilog=examples("sessions export"),
    short_help="Export a session as JSONL (as stored) or Markdown.",
)
@click.argument("session", metavar="ID", shell_complete=session_ids)
@dir_argument
@click.option(
    "--format", "fmt", help="jsonl (the record, as stored) or md (Markdown). Default: from -o, else jsonl."
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write to FILE (else stdout)."
)
@sessions_dir_option
def export_command(
    session: str, directory: str, fmt: str | None, output: Path | None, sessions_dir: str | None
) -> None:
    """Export session ID as JSONL (the record as stored, which other tools of the same session
    format open as it is) or Markdown.

    ID may be any prefix that names one session; DIR is the agent (default .).
    """
    chosen = _format(fmt, output)
    archive = _archive(directory, sessions_dir)

    to_file = output is not None and str(output) != "-"
    from fastagent_cli.cli.export_files import ExportFiles

    files = ExportFiles(output) if to_file and output is not None else None

    async def read() -> tuple[str, bytes]:
        found = await archive.resolve(session)
        if chosen == "jsonl":
            return found, await archive.export_jsonl(found)
        from fastagent_cli.cli.transcript import markdown

        stored = await archive.read(found)
        if stored is None:
            raise SessionError(f"session {found!r} went away while it was being read")
        return found, markdown(stored, files.save if files is not None else None).encode("utf-8")

    session, data = _on_archive(archive, read)
    if output is None or not to_file:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    from fastagent_cli.state.atomic import publish_file

    try:
        for relative, raw in (files.files if files is not None else {}).items():  # the Markdown links them
            target = output.resolve().parent / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            publish_file(target, raw, mode=0o600, replace=True)
        publish_file(output.resolve(), data, mode=0o600, replace=True)
    except OSError as exc:
        raise SessionError(f"cannot write {output}: {exc.strerror or exc}") from None
    kept = files.summary() if files is not None else ""
    say(f"[fastagent] exported session {session} to {output} ({chosen}{kept})")


def _format(fmt: str | None, output: Path | None) -> str:
    if fmt is not None:
        if fmt.lower() not in _FORMATS:
            raise UsageError(f"unknown format {fmt!r}: use jsonl or md")
        return _FORMATS[fmt.lower()]
    suffix = output.suffix.lower() if output is not None else ""
    return "md" if suffix in (".md", ".markdown") else "jsonl"


@sessions.command("import", epilog=examples("sessions import"))
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@dir_argument
@click.option(
    "-s",
    "--session",
    "pick",
    metavar="ID",
    help="The session to take from a directory (an id or its prefix).",
)
@click.option("--all", "take_all", is_flag=True, help="Take every session in SOURCE (each under its own id).")
@click.option("--as", "as_id", metavar="ID", help="Store it under this id instead of its own.")
@click.option("--new-id", is_flag=True, help="Store it under a new random id.")
@click.option("-j", "--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
@sessions_dir_option
def import_command(
    source: Path,
    directory: str,
    pick: str | None,
    take_all: bool,
    as_id: str | None,
    new_id: bool,
    as_json: bool,
    sessions_dir: str | None,
) -> None:
    """Import sessions from SOURCE into the agent in DIR (default .).

    SOURCE is a session file (fastagent's JSONL session format, also written by the pi coding
    agent), a sessions directory (an agent's .fastagent/sessions, or ~/.pi/agent/sessions) or
    another agent directory.
    """
    if as_id is not None and new_id:
        raise UsageError("--as and --new-id are mutually exclusive")
    if take_all and (pick is not None or as_id is not None or new_id):
        raise UsageError(
            "--all takes every session under its own id: it goes without --session, --as, --new-id"
        )
    if as_id is not None and not as_id:
        raise UsageError("--as needs a non-empty id")
    archive = _archive(directory, sessions_dir)
    chosen = _choose(archive.sources(source), source, pick, take_all)
    imported: list[dict[str, str | None]] = []
    failed: list[dict[str, str]] = []

    async def store_all() -> None:
        for record in chosen:
            target = as_id if as_id is not None else (str(uuid.uuid4()) if new_id else None)
            try:
                session, path = await archive.import_record(record, target)
            except DatabaseError:
                raise  # the database is away: every next record would fail the same way
            except FastagentError as exc:
                if not take_all:
                    raise
                failed.append({"from": str(record.path), "error": exc.message})
                say(f"[fastagent] skipped {record.path}: {exc.message}")
                continue
            imported.append(
                {"session": session, "from": str(record.path), "path": None if path is None else str(path)}
            )
            if not as_json:
                click.echo(f"imported {session} ({archive.where if path is None else path})")

    _on_archive(archive, store_all)
    if as_json:
        click.echo(json.dumps({"imported": imported, "failed": failed}, indent=2, ensure_ascii=False))
    if failed:
        raise SessionError(f"{len(failed)} of {len(chosen)} sessions were not imported (see above)")


def _choose(
    records: list[ForeignRecord], source: Path, pick: str | None, take_all: bool
) -> list[ForeignRecord]:
    if not records:
        raise SessionError(f"no session files in {source}")
    if take_all:
        return records
    if pick is not None:
        exact = [r for r in records if pick in (r.session, r.header.get("id"))]
        matches = exact or [r for r in records if r.session.startswith(pick)]
        if len(matches) == 1:
            return matches
        if not matches:
            raise SessionError(f"no session {pick!r} in {source} ({_newest(records)})")
        raise SessionError(f"{pick!r} names {len(matches)} sessions in {source}: type more of the id")
    if len(records) == 1:
        return records
    raise SessionError(
        f"{source} holds {len(records)} sessions: pick one with --session ID, or take them all with --all "
        f"({_newest(records)})"
    )


def _newest(records: list[ForeignRecord]) -> str:
    shown = ", ".join(r.session for r in records[:3])
    return f"newest: {shown}" + (", ..." if len(records) > 3 else "")
