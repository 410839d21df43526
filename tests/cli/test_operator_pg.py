"""``fastagent sessions ...`` and ``fastagent schedule ...`` on ``state_backend = "postgres"``, as
the real process against a real PostgreSQL: they read and write the database the instances
share, not the file store; an unreachable database is one ``Error:`` line (no password), exit 1."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from fastagent_cli.state.pg.claims import PgClaims
from fastagent_cli.state.pg.database import Database
from fastagent_cli.state.pg.settings import DatabaseSettings
from fastagent_cli.state.wakeup import Wakeup
from tests.conftest import AgentFactory, RunCli
from tests.serving.serving_proc import ServerProcess, free_port

PG = 'state_backend = "postgres"\n'


def _fetch(url: str, sql: str, *args: Any) -> list[Any]:
    async def run() -> list[Any]:
        conn = await asyncpg.connect(url)
        try:
            return list(await conn.fetch(sql, *args))
        finally:
            await conn.close()

    return asyncio.run(run())


def test_sessions_list_show_export_read_the_database(
    make_agent: AgentFactory, run_cli: RunCli, database_url: str, tmp_path: Path
) -> None:
    agent = make_agent(config=PG)
    env = {"FASTAGENT_DATABASE_URL": database_url, "FASTAGENT_STATE_DIR": str(tmp_path / "state")}
    turn = run_cli("invoke", "hello database", str(agent), "--session", "pg-one", env=env)
    assert turn.returncode == 0 and turn.stdout.strip() == "echo: hello database", turn.stderr
    # another machine: a state directory of its own, so nothing can come from files
    other = {**env, "FASTAGENT_STATE_DIR": str(tmp_path / "elsewhere")}
    listed = run_cli("sessions", "list", str(agent), "--json", env=other)
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    assert doc["total"] == 1
    [row] = doc["sessions"]
    assert row["session"] == "pg-one" and row["messageCount"] == 2 and row["path"] is None
    assert row["preview"] == "hello database"
    table = run_cli("sessions", "list", str(agent), env=other)
    assert table.returncode == 0 and "pg-one" in table.stdout, table.stderr
    shown = run_cli("sessions", "show", "pg-o", str(agent), env=other)  # a prefix
    assert shown.returncode == 0, shown.stderr
    assert "hello database" in shown.stdout and "echo: hello database" in shown.stdout
    exported = run_cli("sessions", "export", "pg-one", str(agent), env=other)
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["id"] == "spg-one"  # the spec's spelling
    [(stored,)] = _fetch(database_url, "SELECT count(*) FROM fastagent_entries")
    assert len(lines) - 1 == stored
    missing = run_cli("sessions", "show", "nope", str(agent), env=other)
    assert missing.returncode == 1
    assert "no session 'nope' in the database postgres postgresql://" in missing.stderr
    assert not (tmp_path / "elsewhere" / "sessions").exists() or not any(
        (tmp_path / "elsewhere" / "sessions").rglob("*.jsonl")
    )


def test_sessions_import_writes_into_the_database(
    make_agent: AgentFactory, run_cli: RunCli, database_url: str, tmp_path: Path
) -> None:
    files = make_agent(name="files-agent")
    turn = run_cli("invoke", "from the files", str(files), "--session", "carried")
    assert turn.returncode == 0, turn.stderr
    record = tmp_path / "carried.jsonl"
    exported = run_cli("sessions", "export", "carried", str(files), "-o", str(record))
    assert exported.returncode == 0, exported.stderr
    agent = make_agent(config=PG)
    env = {"FASTAGENT_DATABASE_URL": database_url}
    done = run_cli("sessions", "import", str(record), str(agent), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported carried (the database postgres postgresql://"), done.stdout
    rows = _fetch(database_url, "SELECT message_count FROM fastagent_sessions WHERE session = 'carried'")
    assert [r["message_count"] for r in rows] == [2]
    assert not (agent / ".fastagent" / "sessions").exists()
    again = run_cli("sessions", "import", str(record), str(agent), env=env)
    assert again.returncode == 1
    assert "session 'carried' exists here already (in the database postgres" in again.stderr
    assert "--as ID or --new-id" in again.stderr
    renamed = run_cli("sessions", "import", str(record), str(agent), "--as", "copy", env=env)
    assert renamed.returncode == 0, renamed.stderr
    # the imported session continues on the database backend
    cont = run_cli("invoke", "and on", str(agent), "--session", "copy", env=env)
    assert cont.returncode == 0 and cont.stdout.strip() == "echo: and on", cont.stderr
    rows = _fetch(database_url, "SELECT message_count FROM fastagent_sessions WHERE session = 'copy'")
    assert [r["message_count"] for r in rows] == [4]


def _add_wakeups(url: str, namespace: str, *wakeups: Wakeup) -> None:
    async def add() -> None:
        db = Database(DatabaseSettings(url, namespace, 2, "test"))
        try:
            claims = PgClaims(db)
            for wakeup in wakeups:
                await claims.add_wakeup(wakeup, limit=10)
        finally:
            await db.aclose()

    asyncio.run(add())


def test_schedule_list_and_cancel_use_the_databases_wakeups(
    make_agent: AgentFactory, run_cli: RunCli, database_url: str, tmp_path: Path
) -> None:
    agent = make_agent(config=PG + 'self_schedule = true\n[database]\nnamespace = "ops"\n')
    soon = datetime.now(UTC) + timedelta(hours=2)
    _add_wakeups(
        database_url,
        "ops",
        Wakeup("w-one", "alice", "check the build", soon),
        Wakeup("w-two", "bob", "water the plants", soon + timedelta(minutes=5)),
    )
    env = {"FASTAGENT_DATABASE_URL": database_url, "FASTAGENT_STATE_DIR": str(tmp_path / "state")}
    listed = run_cli("schedule", "list", str(agent), "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [(w["id"], w["session"]) for w in json.loads(listed.stdout)["wakeups"]] == [
        ("w-one", "alice"),
        ("w-two", "bob"),
    ]
    table = run_cli("schedule", "list", str(agent), env=env)
    assert "w-one" in table.stdout and "session=bob" in table.stdout, table.stdout
    cancelled = run_cli("schedule", "cancel", "w-one", str(agent), "--json", env=env)
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["cancelled"]["prompt"] == "check the build"
    rows = _fetch(database_url, "SELECT id FROM fastagent_wakeups WHERE namespace = 'ops'")
    assert [r["id"] for r in rows] == ["w-two"]
    again = run_cli("schedule", "cancel", "w-one", str(agent), env=env)
    assert again.returncode == 1
    assert "no pending wake-up w-one (state: postgres postgresql://" in again.stderr
    assert not (tmp_path / "state" / "schedule").exists()


def test_an_unreachable_database_is_one_line_and_exit_1(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent(config=PG)
    port = free_port()
    env = {"FASTAGENT_DATABASE_URL": f"postgresql://fa:s3cret@127.0.0.1:{port}/agent"}
    record = agent / "one.jsonl"
    header = {"type": "session", "version": 3, "id": "x", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    record.write_text(json.dumps(header) + "\n")
    for args in (
        ("sessions", "list"),
        ("sessions", "show", "x"),
        ("sessions", "export", "x"),
        ("sessions", "import", str(record)),
        ("schedule", "list"),
        ("schedule", "history", "digest"),
        ("schedule", "cancel", "w1"),
    ):
        done = run_cli(*args[:2], *args[2:], str(agent), env=env, timeout=60)
        assert done.returncode == 1, (args, done.stderr)
        [error] = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
        assert error.endswith(
            f"cannot connect to the database postgresql://fa@127.0.0.1:{port}/agent "
            "(FASTAGENT_DATABASE_URL): connection refused"
        ), (args, done.stderr)
        assert "s3cret" not in done.stderr + done.stdout and "Traceback" not in done.stderr, args


async def test_schedule_runs_are_kept_in_the_database_and_history_reads_them(
    make_agent: AgentFactory, run_cli: RunCli, database_url: str, tmp_path: Path
) -> None:
    # a real `fastagent start` on the database fires a slot (its clock moved to just before 09:00,
    # the slot claimed yesterday so it fires at once): the run is a row of fastagent_runs, no file
    agent = make_agent(model="scripted/echo", config=PG + '[database]\nnamespace = "runs"\n')
    (agent / "schedules").mkdir()
    (agent / "schedules" / "digest.toml").write_text('cron = "0 9 * * *"\nprompt = "send the digest"\n')
    state = tmp_path / "state"
    env = {"FASTAGENT_DATABASE_URL": database_url, "FASTAGENT_STATE_DIR": str(state)}
    assert run_cli("db", "migrate", str(agent), env=env).returncode == 0
    now = datetime.now(UTC)
    slot = now.replace(hour=9, minute=0, second=0, microsecond=0)
    slot = slot if slot > now else slot + timedelta(days=1)
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "INSERT INTO fastagent_fires (namespace, schedule, fired_at) VALUES ('runs', 'digest', $1)",
            slot - timedelta(days=1),
        )
    finally:
        await conn.close()
    clock = {"FASTAGENT_CLOCK_OFFSET": f"{slot.timestamp() - 5 - time.time():.3f}"}
    async with ServerProcess.spawn(
        "start", str(agent), "--port", "0", "--bind", "127.0.0.1", env={**env, **clock}
    ) as server:
        await server.port()
        await server.wait_for(r"\[schedule\] digest completed \(\d+ms\)", within=60)
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT namespace, name, body FROM fastagent_runs")
    finally:
        await conn.close()
    assert [(r["namespace"], r["name"]) for r in rows] == [("runs", "digest")]
    run = json.loads(rows[0]["body"])
    assert (run["session"], run["outcome"], run["reply"]) == (
        "schedule:digest",
        "completed",
        "echo: send the digest",
    )
    assert not (state / "schedule" / "runs.jsonl").exists()

    history = run_cli("schedule", "history", "digest", str(agent), "--json", env=env)
    assert history.returncode == 0, history.stderr
    assert json.loads(history.stdout) == [run]
    table = run_cli("schedule", "history", "digest", str(agent), env=env)
    assert table.returncode == 0 and "completed" in table.stdout and "echo: send the digest" in table.stdout
    none = run_cli("schedule", "history", "wake", str(agent), env=env)
    assert (
        none.returncode == 0 and 'no runs recorded for "wake" (state: postgres postgresql://' in none.stderr
    )
