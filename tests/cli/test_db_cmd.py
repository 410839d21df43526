"""``fastagent db status|migrate|import`` as the real process, against a real PostgreSQL."""

from __future__ import annotations

import asyncio
import json

import asyncpg

from tests.conftest import AgentFactory, RunCli

PG = 'state_backend = "postgres"\n'


def test_status_then_migrate_then_status(
    make_agent: AgentFactory, run_cli: RunCli, database_url: str
) -> None:
    agent = make_agent(config=PG)
    env = {"FASTAGENT_DATABASE_URL": database_url}
    before = run_cli("db", "status", str(agent), "--json", env=env)
    assert before.returncode == 0, before.stderr
    doc = json.loads(before.stdout)
    assert doc["version"] == 0 and doc["pending"][0]["version"] == 1
    assert doc["database"].startswith("postgres postgresql://fastagent@127.0.0.1:")
    migrated = run_cli("db", "migrate", str(agent), env=env)
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.startswith("applied migration 1: ")
    again = run_cli("db", "migrate", str(agent), env=env)
    assert again.stdout.strip() == f"the schema is current (version {doc['latest']})"
    after = run_cli("db", "status", str(agent), env=env)
    assert "pending:  none" in after.stdout


def test_import_moves_file_sessions_once(
    make_agent: AgentFactory, run_cli: RunCli, database_url: str
) -> None:
    agent = make_agent()
    for session in ("one", "two"):
        done = run_cli("invoke", f"hello {session}", str(agent), "--session", session)
        assert done.returncode == 0, done.stderr
    (agent / "fastagent.toml").write_text('model = "scripted/echo"\n' + PG)
    env = {"FASTAGENT_DATABASE_URL": database_url}
    first = run_cli("db", "import", str(agent), "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert sorted(json.loads(first.stdout)["imported"]) == ["one", "two"]
    second = run_cli("db", "import", str(agent), env=env)
    assert "imported 0 session(s)" in second.stdout and "2 already there" in second.stdout
    # the imported session continues on the database backend
    cont = run_cli("invoke", "again", str(agent), "--session", "one", env=env)
    assert cont.returncode == 0 and cont.stdout.strip() == "echo: again", cont.stderr

    async def messages() -> int:
        conn = await asyncpg.connect(database_url)
        try:
            return int(
                await conn.fetchval("SELECT message_count FROM fastagent_sessions WHERE session = 'one'")
            )
        finally:
            await conn.close()

    assert asyncio.run(messages()) == 4


def test_a_files_agent_is_a_usage_error(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("db", "status", str(make_agent()))
    assert done.returncode == 2
    assert 'keeps its state in files: set state_backend = "postgres"' in done.stderr
