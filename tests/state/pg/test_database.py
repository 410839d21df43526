"""The database connections against a real PostgreSQL: migrations, leases as advisory locks that
die with the link, the fence on writes after a lost link, reconnects, clear errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from fastagent_cli.errors import DatabaseError
from fastagent_cli.state.pg import Database, DatabaseSettings
from fastagent_cli.state.pg.link import EntryWrite
from fastagent_cli.state.pg.migrations import LATEST_VERSION, migrate, schema_status
from fastagent_cli.state.pg.schema import MIGRATIONS
from fastagent_cli.state.pg.settings import advisory_key, check_database_url, redact_url


@pytest.fixture
async def databases(database_url: str) -> AsyncIterator[Callable[[], asyncio.Future[Database]]]:
    opened: list[Database] = []

    async def open_one() -> Database:
        db = Database(DatabaseSettings(database_url, "agent"))
        opened.append(db)
        await db.connect()
        return db

    yield open_one  # type: ignore[misc]
    for db in opened:
        await db.aclose()


async def wait_for(check: Callable[[], bool], within: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_connect_applies_the_migrations_once(databases: Callable[[], asyncio.Future[Database]]) -> None:
    first = await databases()
    second = await databases()  # a second instance starting: nothing left to apply
    async with first.connection() as conn:
        status = await schema_status(conn)
        assert status.version == LATEST_VERSION and status.pending == ()
        assert await migrate(conn) == []
        rows = await conn.fetch("SELECT version FROM fastagent_schema")
    assert sorted(r[0] for r in rows) == [version for version, _, _ in MIGRATIONS]
    assert second.instance != first.instance


async def test_a_newer_schema_is_refused(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await migrate(conn)
        await conn.execute("INSERT INTO fastagent_schema (version, description) VALUES (999, 'future')")
    finally:
        await conn.close()
    db = Database(DatabaseSettings(database_url, "agent"))
    with pytest.raises(DatabaseError, match=r"schema is at version 999, newer than this fastagent knows"):
        await db.connect()
    await db.aclose()


async def test_an_unreachable_database_is_one_clear_line_without_the_password() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://fa:s3cret@127.0.0.1:{port}/agent"
    db = Database(DatabaseSettings(url, "agent"))
    with pytest.raises(DatabaseError) as caught:
        await db.connect()
    message = caught.value.message
    assert message == (
        f"cannot connect to the database postgresql://fa@127.0.0.1:{port}/agent (FASTAGENT_DATABASE_URL): "
        "connection refused"
    )
    assert caught.value.retryable
    await db.aclose()


def test_urls_are_checked_and_redacted() -> None:
    assert (
        redact_url("postgresql://u:p@db.example:6543/x?sslmode=require") == "postgresql://u@db.example:6543/x"
    )
    assert check_database_url(" postgres://h/db ", "X") == "postgres://h/db"
    with pytest.raises(Exception, match=r"X: expected a postgresql://.* not mysql://"):
        check_database_url("mysql://h/db", "X")


async def test_a_lease_is_held_by_one_instance_and_dies_with_its_link(
    databases: Callable[[], asyncio.Future[Database]],
) -> None:
    a, b = await databases(), await databases()
    key = advisory_key("agent", "session", "s1")
    epoch = await a.link.try_lock(key)
    assert epoch is not None
    assert await b.link.try_lock(key) is None
    a.link.unlock(key, epoch)
    await wait_for_lock(b, key)
    # b holds it now; a's link going away is what frees a lease without a release
    await a.link.try_lock(advisory_key("agent", "session", "s2"))
    await a.aclose()
    assert await b.link.try_lock(advisory_key("agent", "session", "s2")) is not None


async def wait_for_lock(db: Database, key: int, within: float = 5.0) -> int:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        epoch = await db.link.try_lock(key)
        if epoch is not None:
            return epoch
        assert asyncio.get_running_loop().time() < deadline, "the lock was never released"
        await asyncio.sleep(0.02)


async def test_a_lost_link_fences_writes_of_its_leases_and_reconnects(
    databases: Callable[[], asyncio.Future[Database]],
) -> None:
    a, b = await databases(), await databases()
    lost: list[int] = []
    a.link.on_lost.append(lost.append)
    key = advisory_key("agent", "session", "s1")
    epoch = await a.link.try_lock(key)
    assert epoch is not None
    async with a.connection() as conn:
        rid = await conn.fetchval(
            "INSERT INTO fastagent_sessions (namespace, session, header, created) "
            "VALUES ('agent', 's1', '{}', now()) RETURNING rid"
        )
        backend = await conn.fetchval(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1", f"fastagent/{a.instance}/link"
        )
        await conn.execute("SELECT pg_terminate_backend($1)", backend)
    await wait_for(lambda: lost == [epoch])
    assert await b.link.try_lock(key) is not None  # the lock went with the connection
    write = EntryWrite(rid, 1, ['{"type":"message"}'], epoch)
    a.link.write(write)
    with pytest.raises(DatabaseError, match="lost the connection|lease went with"):
        await write.done
    await wait_for(lambda: a.link.up)  # reconnected in the background
    fresh = await a.link.try_lock(advisory_key("agent", "session", "s3"))
    assert fresh is not None and fresh != epoch
    ok = EntryWrite(rid, 1, ['{"type":"message"}'], fresh, messages=1, first_prompt="hi")
    a.link.write(ok)
    await ok.done
    async with b.connection() as conn:
        row = await conn.fetchrow("SELECT entry_count, message_count, first_prompt FROM fastagent_sessions")
    assert tuple(row) == (1, 1, "hi")


async def test_two_writers_on_one_record_cannot_interleave(
    databases: Callable[[], asyncio.Future[Database]],
) -> None:
    a, b = await databases(), await databases()
    async with a.connection() as conn:
        rid = await conn.fetchval(
            "INSERT INTO fastagent_sessions (namespace, session, header, created) "
            "VALUES ('agent', 's', '{}', now()) RETURNING rid"
        )
        other = await conn.fetchval(
            "INSERT INTO fastagent_sessions (namespace, session, header, created) "
            "VALUES ('agent', 't', '{}', now()) RETURNING rid"
        )
    first = EntryWrite(rid, 1, ["a"], None)
    a.link.write(first)
    await first.done
    clash = EntryWrite(rid, 1, ["b"], None)  # another instance writing the same position
    fine = EntryWrite(other, 1, ["c"], None)
    b.link.write(clash)
    b.link.write(fine)
    await fine.done  # the batch was split: only the culprit fails
    with pytest.raises(DatabaseError, match="cannot write the session record: duplicate key"):
        await clash.done
    async with a.connection() as conn:
        lines = [r[0] for r in await conn.fetch("SELECT line FROM fastagent_entries ORDER BY rid, seq")]
    assert lines == ["a", "c"]


async def test_notifications_follow_the_writes_they_announce(
    databases: Callable[[], asyncio.Future[Database]],
) -> None:
    a, b = await databases(), await databases()
    heard: list[str] = []

    async def hear(payload: str) -> None:
        heard.append(payload)

    await b.listener.subscribe("fastagent.test", hear)
    big = '"' + "x" * 9000 + '"'
    for item in ('"one"', big, '"two"'):
        a.link.notify("fastagent.test", item)
    await wait_for(lambda: len(heard) >= 2)
    assert heard[0] == f'{{"i":"{a.instance}","e":["one"]}}'
    assert '"spill"' in heard[1] and a.instance in heard[1]
    await wait_for(lambda: len(heard) == 3)
    assert heard[2] == f'{{"i":"{a.instance}","e":["two"]}}'
