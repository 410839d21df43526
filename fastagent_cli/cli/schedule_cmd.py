"""``fastagent schedule list|history|cancel``: what will fire, what did, and the operator's kill
switch for wake-ups.

* ``list [dir] [--json]``: a table (:mod:`~fastagent_cli.cli.schedule_view`) with a header, one
  row per schedule (name, next run in its zone, ``in 3 min``, cron and tz) and per pending wake-up
  (id, when, ``one-shot|cron <expr>``, ``session=<s>``, the prompt); ``--json`` prints
  ``{schedules: [{name, file, cron, tz, prompt, next}], wakeups: [...], scheduleFailures: [{file, error}]}``.
* ``history <name|wake> [dir] [--json]``: the last 20 runs from ``runs.jsonl``,
  ``<firedAt>  <outcome> <ms>ms  <reply or error, first 100 chars>``; ``--json`` prints every
  record. No runs is a message on stderr, not an error.
* ``cancel <id> [dir] [--json]``: remove any pending wake-up, whichever session set it (the
  agent's own ``unwake`` only reaches its session's); ``--json`` prints ``{cancelled: <entry>}``.
  An unknown id exits 1.

The wake-ups are where the agent keeps its state: the files, or with ``state_backend =
"postgres"`` (or ``FASTAGENT_DATABASE_URL``) the shared database, which an unreachable database
makes one ``Error:`` line and exit 1. The run history is each instance's own ``runs.jsonl``.
``list`` and ``history`` only read; none of them needs a model or imports the agent's tools.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from fastagent_cli.cli.common import dir_argument, run_async, say
from fastagent_cli.cli.completers import schedule_names
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import ScheduleError

if TYPE_CHECKING:
    from datetime import datetime

    from fastagent_cli.assembly import ScheduleDir
    from fastagent_cli.state.claims import Wakeup
    from fastagent_cli.state.clock import Clock

__all__ = ["HISTORY_TAIL", "history_lines", "list_document", "list_lines", "schedule"]

HISTORY_TAIL = 20
T = TypeVar("T")
_REPLY_PREVIEW = 100


@click.group(epilog=examples("schedule"))
def schedule() -> None:
    """List schedules and wake-ups, show run history, cancel a wake-up."""


def _read(directory: str) -> ScheduleDir:
    from fastagent_cli.assembly import read_schedules
    from fastagent_cli.logging_setup import configure_logging

    configure_logging("warn")  # store warnings (a malformed wake-up entry) as WARN lines
    return read_schedules(directory)


async def _on_backend(found: ScheduleDir, work: Callable[[], Awaitable[T]]) -> T:
    """``work``, then the backend's connections closed on the same event loop."""
    try:
        return await work()
    finally:
        await found.backend.aclose()


def _where(found: ScheduleDir) -> str:
    """Where the wake-ups are: the state root, or the database (never its password)."""
    backend = found.backend
    return str(found.state_root) if backend.database_settings is None else backend.describe()


def list_document(found: ScheduleDir, wakeups: list[Wakeup], clock: Clock) -> dict[str, Any]:
    now = clock.now()
    return {
        "schedules": [s.to_json(now) for s in found.schedules.schedules],
        "wakeups": [w.to_json() for w in wakeups],
        "scheduleFailures": [{"file": f.file, "error": f.error} for f in found.schedules.failures],
    }


def list_lines(doc: dict[str, Any], now: datetime) -> list[str]:
    """The table ``schedule list`` prints: a header, then one row per schedule and wake-up."""
    from fastagent_cli.cli.schedule_view import list_rows, table

    return table(list_rows(doc, now))


@schedule.command("list", epilog=examples("schedule list"))
@dir_argument
@click.option("-j", "--json", "as_json", is_flag=True, help="Print one JSON document.")
def list_command(directory: str, as_json: bool) -> None:
    """List schedules with their next run, and pending wake-ups.

    Reads the agent in DIR (default .); creates nothing.
    """
    from fastagent_cli.state.clock import system_clock

    found = _read(directory)
    try:
        wakeups = run_async(_on_backend(found, found.backend.schedule_claims().wakeups))
    except OSError as exc:
        raise ScheduleError(f"cannot read the pending wake-ups: {exc}") from None
    clock = system_clock()
    doc = list_document(found, wakeups, clock)
    for failure in found.schedules.failures:
        say(f"[fastagent] warn: {failure.message}")
    if as_json:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    lines = list_lines(doc, clock.now())
    if not lines:
        say(f"nothing scheduled — no schedules/ files, no pending wake-ups (state: {_where(found)})")
    for line in lines:
        click.echo(line)


def history_lines(records: list[dict[str, Any]]) -> list[str]:
    lines = []
    for r in records[-HISTORY_TAIL:]:
        text = r.get("reply") if r.get("outcome") == "completed" else r.get("error")
        preview = " ".join(str(text or "").split())[:_REPLY_PREVIEW]
        lines.append(
            f"{r.get('firedAt', '?')}  {r.get('outcome', '?'):<9} {r.get('ms', 0):>6}ms  {preview}".rstrip()
        )
    return lines


@schedule.command("history", epilog=examples("schedule history"))
@click.argument("name", shell_complete=schedule_names)
@dir_argument
@click.option("-j", "--json", "as_json", is_flag=True, help="Print every recorded run as JSON.")
def history_command(name: str, directory: str, as_json: bool) -> None:
    """Show the last runs of schedule NAME (or of wake-ups: wake).

    Reads the agent in DIR (default .): the last 20 runs, or every run with --json.
    """
    from fastagent_cli.state.run_log import RunLogUnavailable

    found = _read(directory)
    runs = found.backend.run_log()
    try:
        records = run_async(_on_backend(found, lambda: runs.read(name)))
    except RunLogUnavailable as exc:
        raise ScheduleError(f"cannot read the schedule runs: {exc}") from None
    except OSError as exc:
        raise ScheduleError(f"cannot read {runs.where}: {exc.strerror or exc}") from None
    if as_json:
        click.echo(json.dumps(records, indent=2, ensure_ascii=False))
        return
    if not records:
        known = "" if name == "wake" or found.schedules.get(name) else _known(found)
        say(f'no runs recorded for "{name}" (state: {_where(found)}){known}')
        return
    for line in history_lines(records):
        click.echo(line)
    if len(records) > HISTORY_TAIL:
        say(f"(the last {HISTORY_TAIL} of {len(records)} runs; --json prints them all)")


def _known(found: ScheduleDir) -> str:
    names = ", ".join([*found.schedules.names, "wake"])
    return f"; known names: {names}"


@schedule.command("cancel", epilog=examples("schedule cancel"))
@click.argument("wake_id", metavar="ID")
@dir_argument
@click.option("-j", "--json", "as_json", is_flag=True, help="Print the cancelled wake-up as JSON.")
def cancel_command(wake_id: str, directory: str, as_json: bool) -> None:
    """Cancel a pending wake-up, whichever conversation set it.

    ID is what `fastagent schedule list` shows; DIR is the agent (default .).
    """
    found = _read(directory)
    claims = found.backend.schedule_claims()

    async def cancel() -> Wakeup | None:
        entry = next((w for w in await claims.wakeups() if w.id == wake_id), None)
        return entry if await claims.remove_wakeup(wake_id) else None

    try:
        removed = run_async(_on_backend(found, cancel))
    except OSError as exc:
        raise ScheduleError(f"cannot change the pending wake-ups: {exc}") from None
    if removed is None:
        raise ScheduleError(
            f"no pending wake-up {wake_id} (state: {_where(found)}) — `fastagent schedule list` shows ids"
        )
    if as_json:
        click.echo(json.dumps({"cancelled": removed.to_json()}, indent=2, ensure_ascii=False))
    say(f"[fastagent] cancelled wake-up {wake_id}")
