"""``fastagent usage [dir] [--since 7d] [--by session|model|day] [--session ID] [--json]``: what the
agent's model requests used and cost, from its usage ledger (files or the shared database), and
what the ``[limits]`` leave.

Text: a table (one row per day, session or model, then the total) and one line per limit set:
``max_cost_per_day = $20.00: $3.2100 used today (UTC), $16.79 left``. ``--json`` prints
``{since, by, groups: [{key, requests, inputTokens, outputTokens, cacheReadTokens,
cacheWriteTokens, totalTokens, cost}], total, today, limits: [{limit, value, window, used?,
left?}]}``. No model is needed. Exit 2 for a bad option value, 1 when the store cannot be read.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import click

from fastagent_cli.cli.common import dir_argument, run_async, say
from fastagent_cli.cli.help_text import examples
from fastagent_cli.errors import SessionError

if TYPE_CHECKING:
    from fastagent_cli.assembly import SessionArchive
    from fastagent_cli.state.usage import UsageEntry, UsageTotals

__all__ = ["usage"]

_BY = ("day", "session", "model")


@click.command(epilog=examples("usage"))
@dir_argument
@click.option("--since", metavar="WHEN", help="Only usage since WHEN: 30m, 24h, 7d, 2w, or a date (UTC).")
@click.option(
    "--by", "by", type=click.Choice(_BY), default="day", show_default=True, help="Group the totals by this."
)
@click.option("-s", "--session", "session", metavar="ID", help="Only this session (and its limits' left).")
@click.option("-j", "--json", "as_json", is_flag=True, help="Print one JSON document.")
def usage(directory: str, since: str | None, by: str, session: str | None, as_json: bool) -> None:
    """Show what the agent's model requests used and cost, and what its limits leave.

    Reads the usage the agent in DIR (default .) recorded for every model answer; days are UTC.
    """
    from fastagent_cli.assembly import open_session_archive
    from fastagent_cli.cli.usage_view import (
        limits_left,
        ordered,
        parse_since,
        since_label,
        summary,
        table_lines,
        today_start,
    )
    from fastagent_cli.logging_setup import configure_logging
    from fastagent_cli.state.usage import UsageTotals, group_totals

    now = int(time.time() * 1000)
    since_ms = parse_since(since, now) if since is not None else None
    configure_logging("warn")
    archive = open_session_archive(directory)

    async def read() -> tuple[str | None, list[UsageEntry], list[UsageEntry], UsageTotals | None]:
        try:
            entries = await archive.usage_entries(since_ms)
            today = await archive.usage_entries(today_start(now))
            chosen = await _resolve(archive, session) if session is not None else None
            if chosen is None:
                return None, entries, today, None
            sums = (await archive.usage_totals([chosen])).get(chosen, UsageTotals())
            return chosen, [e for e in entries if e.session == chosen], today, sums
        finally:
            await archive.aclose()

    chosen, entries, today_entries, session_sums = run_async(read())
    groups = ordered(group_totals(entries, by), by)
    total = UsageTotals.of(entries)
    today = UsageTotals.of(today_entries)
    limits = limits_left(archive.limits, today, session_sums)
    if as_json:
        doc: dict[str, Any] = {
            "since": since_label(since_ms),
            "by": by,
            "session": chosen,
            "groups": [{"key": key, **sums.to_json()} for key, sums in groups.items()],
            "total": total.to_json(),
            "today": today.to_json(),
            "limits": [limit.to_json() for limit in limits],
        }
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    if not entries:
        where = f"session {chosen}" if chosen else "this agent"
        say(f"no usage recorded for {where}" + (f" since {since_label(since_ms)}" if since_ms else ""))
    else:
        for line in table_lines(by, groups, total):
            click.echo(line)
    if limits:
        click.echo("")
        click.echo(f"today (UTC): {summary(today)}")
        for limit in limits:
            click.echo(limit.line())


async def _resolve(archive: SessionArchive, typed: str) -> str:
    """The session ``typed`` names: a stored one (an id or its prefix), or one deleted since that
    the ledger still has under that exact id."""
    try:
        return await archive.resolve(typed)
    except SessionError:
        if await archive.usage_totals([typed]):
            return typed
        raise
