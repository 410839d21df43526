"""``fastagent db status|migrate|import``: the shared state database (``state_backend =
"postgres"`` or ``FASTAGENT_DATABASE_URL``).

* ``status [dir] [--json]``: the database (never its password), the schema version and the
  migrations still to apply;
* ``migrate [dir]``: apply them now (every instance also applies them when it starts, once);
* ``import [dir] [--json]``: copy the agent's file sessions (``.fastagent/sessions``) into the
  database; sessions already there are left alone, so it can be run again.

An agent that keeps its state in files is a usage error (exit 2); an unreachable database is one
``Error:`` line (exit 1).
"""

from __future__ import annotations

import json

import click

from fastagent_cli.cli.common import dir_argument, run_async, say
from fastagent_cli.cli.help_text import examples

__all__ = ["db"]


@click.group(epilog=examples("db"))
def db() -> None:
    """The shared state database (state_backend = "postgres")."""


def _schema_lines(version: int, latest: int, pending: list[tuple[int, str]]) -> list[str]:
    lines = [f"schema:   version {version} (this fastagent knows {latest})"]
    if pending:
        lines += [f"pending:  {v}: {d}" for v, d in pending]
    else:
        lines.append("pending:  none")
    return lines


@db.command("status", epilog=examples("db status"))
@dir_argument
@click.option("-j", "--json", "as_json", is_flag=True, help="Print one JSON document.")
def status_command(directory: str, as_json: bool) -> None:
    """Show the database, its schema version and pending migrations."""
    from fastagent_cli.assembly.database_admin import open_state_database

    admin = open_state_database(directory)
    report = run_async(admin.status())
    if as_json:
        doc = {
            "database": admin.describe(),
            "version": report.version,
            "latest": report.latest,
            "pending": [{"version": v, "description": d} for v, d in report.pending],
        }
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"database: {admin.describe()}")
    for line in _schema_lines(report.version, report.latest, report.pending):
        click.echo(line)


@db.command("migrate", epilog=examples("db migrate"), short_help="Apply the pending schema migrations.")
@dir_argument
def migrate_command(directory: str) -> None:
    """Apply the pending schema migrations (instances also apply them at start)."""
    from fastagent_cli.assembly.database_admin import open_state_database

    admin = open_state_database(directory)
    report = run_async(admin.migrate())
    for version, description in report.applied:
        click.echo(f"applied migration {version}: {description}")
    if not report.applied:
        click.echo(f"the schema is current (version {report.version})")


@db.command(
    "import", epilog=examples("db import"), short_help="Copy the agent's file sessions into the database."
)
@dir_argument
@click.option("-j", "--json", "as_json", is_flag=True, help="Print one JSON document.")
def import_command(directory: str, as_json: bool) -> None:
    """Copy the agent's file sessions into the database (those already there are kept)."""
    from fastagent_cli.assembly.database_admin import open_state_database

    admin = open_state_database(directory)
    report = run_async(admin.import_files())
    if as_json:
        doc = {
            "imported": report.imported,
            "skipped": report.skipped,
            "failed": [{"session": s, "error": e} for s, e in report.failed],
        }
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    for session, why in report.failed:
        say(f"[fastagent] warn: session {session}: not imported: {why}")
    click.echo(
        f"imported {len(report.imported)} session(s) from {admin.sessions_dir} into {admin.describe()}"
        + (f"; {len(report.skipped)} already there" if report.skipped else "")
    )
