"""``fastagent fire <name> [dir]``: run one schedule's turn now, for authoring.

The turn runs in the schedule's own session (``schedule:<name>``), as the scheduler would run it,
but the claims (``fires.json``) are not touched, so the next cron slot still fires. Output is
``invoke``'s: the answer on stdout, tool lines on stderr, ``--json`` for events; exit 1 if the turn
failed. An unknown name exits 1 naming the schedules found and where they were looked for; a
schedule file with a problem exits 1 with the problem.
"""

from __future__ import annotations

from pathlib import Path
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
from fastagent_cli.cli.completers import schedule_names
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import ScheduleError

if TYPE_CHECKING:
    from fastagent_cli.definition.schedules import Schedule, ScheduleSet

__all__ = ["display_path", "find_schedule", "fire"]


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is inside it, else absolute."""
    try:
        relative = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return str(path)
    return str(relative) if str(relative) != "." else "."


def find_schedule(found: ScheduleSet, name: str) -> Schedule:
    """The schedule ``name``, or a ScheduleError that says why there is none."""
    schedule = found.get(name)
    if schedule is not None:
        return schedule
    broken = found.failure_for(name)
    if broken is not None:
        raise ScheduleError(f'schedule "{name}" cannot run: {broken.file}: {broken.error}')
    available = ", ".join(found.names) or "(none)"
    raise ScheduleError(
        f'unknown schedule "{name}" (looked in {display_path(found.directory)}). available: {available}'
    )


@click.command(epilog=examples("fire"))
@click.argument("name", shell_complete=schedule_names)
@dir_argument
@model_option
@click.option("-j", "--json", "as_json", is_flag=True, help="Print every event as one JSON line on stdout.")
@sessions_dir_option
@auth_path_option
@click.option("--no-input", is_flag=True, help="Never prompt (fail instead).")
def fire(
    name: str,
    directory: str,
    model: str | None,
    as_json: bool,
    sessions_dir: str | None,
    auth_path: str | None,
    no_input: bool,
) -> None:
    """Run schedule NAME of the agent in DIR (default .) now, in its session schedule:NAME.

    The schedule's claims are not touched: its next cron slot still fires.
    """
    from fastagent_cli.assembly import inspect_agent_dir, open_agent
    from fastagent_cli.cli.common import claim_stdout
    from fastagent_cli.cli.invoke_approvals import approver
    from fastagent_cli.cli.invoke_cmd import say_findings, stream_turn
    from fastagent_cli.cli.model_picker import ensure_model

    surface = inspect_agent_dir(directory, model=model, sessions_dir=sessions_dir, auth_path=auth_path)
    schedule = find_schedule(surface.schedules, name)  # an unknown name fails before any picker
    ensure_model(surface, no_input)
    out = claim_stdout()  # what a tool prints goes to stderr, not between the answer's lines
    opened = open_agent(surface)
    opened.answer_approvals(approver("none", "fire has no one to ask"), "fire")
    if not as_json:
        say(f"[fastagent] fire: {name} (session {schedule.session}, {opened.model_spec})")
    say_findings(opened)
    if not run_async(stream_turn(opened, schedule.session, schedule.prompt, as_json, out)):
        raise SystemExit(1)
