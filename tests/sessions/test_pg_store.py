"""Session records in a real PostgreSQL: what one instance appends another reads (incrementally),
the lease across instances, fork, delete, the listing's summary, export/import, and a turn whose
database connection is lost mid-way."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable

import pytest

from fastagent_cli.errors import SessionError
from fastagent_cli.sessions.pg_store import PgSessionStore
from fastagent_cli.sessions.store import FORK_KEY, ForkConflict, release_lease
from fastagent_cli.state.pg import Database, DatabaseSettings

Opener = Callable[[], "asyncio.Future[PgSessionStore]"]


@pytest.fixture
async def stores(database_url: str, tmp_path: object) -> AsyncIterator[Opener]:
    opened: list[Database] = []

    async def open_one() -> PgSessionStore:
        db = Database(DatabaseSettings(database_url, "agent"))
        opened.append(db)
        await db.connect()
        return PgSessionStore(db, "/work")

    yield open_one  # type: ignore[misc]
    for db in opened:
        await db.aclose()


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def assistant(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": 2}


async def turn(store: PgSessionStore, session: str, prompt: str, reply: str) -> None:
    release = await store.lease(session)
    assert release is not None
    try:
        record = await store.open_or_create(session)
        record.append_message(user(prompt))  # type: ignore[arg-type]
        record.append_message(assistant(reply))  # type: ignore[arg-type]
        await record.flush()
    finally:
        await release_lease(release)


def texts(record: object) -> list[str]:
    return [
        e["message"]["content"][0]["text"]
        for e in record.entries  # type: ignore[attr-defined]
        if e.get("type") == "message"
    ]


async def test_what_one_instance_appends_another_reads(stores: Opener) -> None:
    a, b = await stores(), await stores()
    await turn(a, "s1", "hello", "hi there")
    seen = await b.read("s1")
    assert seen is not None and texts(seen) == ["hello", "hi there"]
    assert seen.header["type"] == "session" and seen.header["version"] == 3
    await turn(b, "s1", "again", "sure")  # b continues it; a's cached copy catches up
    again = await a.read("s1")
    assert again is not None and texts(again) == ["hello", "hi there", "again", "sure"]
    ids = [e["id"] for e in again.entries]
    parents = [e["parentId"] for e in again.entries]
    assert parents == [None, *ids[:-1]]  # one chain across both instances
    assert await a.read("nobody") is None


async def test_the_lease_is_one_per_session_across_instances(stores: Opener) -> None:
    a, b = await stores(), await stores()
    release = await a.lease("s")
    assert release is not None
    assert await a.lease("s") is None  # the same instance
    assert await b.lease("s") is None  # another instance
    other = await b.lease("t")
    assert other is not None
    await release_lease(release)  # travels on a's link after its writes; awaited, it is done
    taken = await b.lease("s")
    assert taken is not None
    await release_lease(taken)
    await release_lease(other)
    assert await a.lease("s") is not None


async def test_the_listing_reads_summaries_newest_first(stores: Opener) -> None:
    a, b = await stores(), await stores()
    await turn(a, "old", "first question " + "x" * 600, "answer")
    await turn(a, "new", "second question", "answer")
    listed = await b.listing(None)
    assert [s.session for s in listed] == ["new", "old"]
    assert listed[1].message_count == 2
    assert listed[1].first_prompt.startswith("first question") and len(listed[1].first_prompt) <= 500
    assert [s.session for s in await b.listing(1)] == ["new"]
    assert b.list_sessions(None)[0].session == "new"  # the last listing, for sync callers


async def test_fork_delete_export_import(stores: Opener) -> None:
    a, b = await stores(), await stores()
    await turn(a, "src", "one", "two")
    await turn(a, "src", "three", "four")
    source = await a.read("src")
    assert source is not None
    at = source.entries[1]["id"]  # after the first answer
    assert await a.fork(source, at, "branch") is True
    assert await a.fork(source, at, "branch") is False  # the same fork again: nothing to do
    with pytest.raises(ForkConflict):
        await a.fork(source, source.entries[3]["id"], "branch")
    forked = await b.read("branch")
    assert forked is not None and texts(forked) == ["one", "two"]
    assert forked.header[FORK_KEY] == {"session": "src", "entryId": at}
    exported = await b.export("src")
    assert exported is not None
    lines = exported.decode().splitlines()
    assert len(lines) == 5 and json.loads(lines[0])["type"] == "session"
    head, _, body = exported.partition(b"\n")
    assert await b.import_record("copy", json.loads(head), body) is None
    copied = await a.read("copy")
    assert copied is not None and texts(copied) == ["one", "two", "three", "four"]
    with pytest.raises(SessionError, match="exists already"):
        await b.import_record("copy", json.loads(head), body)
    assert await b.delete("src") is True
    assert await a.read("src") is None
    assert await a.delete("src") is False
    assert {s.session for s in await a.listing(None)} == {"branch", "copy"}


async def test_a_connection_lost_mid_turn_fails_the_turn_retryably(stores: Opener) -> None:
    a, b = await stores(), await stores()
    await turn(a, "s", "before", "ok")
    release = await a.lease("s")
    assert release is not None
    record = await a.open_or_create("s")
    async with b.db.connection() as conn:
        pid = await conn.fetchval(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1", f"fastagent/{a.db.instance}/link"
        )
        await conn.execute("SELECT pg_terminate_backend($1)", pid)
    for _ in range(250):
        if not a.db.link.holds(1):
            break
        await asyncio.sleep(0.02)
    with pytest.raises(SessionError) as caught:
        record.append_message(user("during"))  # type: ignore[arg-type]
        await record.flush()
    assert caught.value.retryable
    release()
    seen = await b.read("s")
    assert seen is not None and texts(seen) == ["before", "ok"]  # nothing half-written
    assert await b.lease("s") is not None  # the lease went with the connection


async def test_a_connection_lost_while_tool_results_are_recorded_is_a_retryable_store_error(
    stores: Opener, caplog: pytest.LogCaptureFixture
) -> None:
    from fastagent_cli import tool
    from fastagent_cli.assembly import create_agent
    from fastagent_cli.contract import Failed
    from fastagent_cli.models.scripted import ScriptedModel
    from tests.conformance.suite import drain

    a, b = await stores(), await stores()

    @tool
    async def cut_database(n: int) -> str:
        """Cuts this instance's database connection."""
        async with b.db.connection() as conn:
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                f"fastagent/{a.db.instance}/link",
            )
        for _ in range(250):
            if not a.db.link.holds(1):
                break
            await asyncio.sleep(0.02)
        return f"cut {n}"

    calls = [{"name": "cut_database", "args": {"n": n}} for n in (1, 2)]  # parallel: a task group
    model = ScriptedModel.from_script({"steps": [{"toolCalls": calls}, {"text": "done"}]})
    agent = create_agent(model=model, tools=[cut_database], sessions=a)
    caplog.set_level(logging.WARNING, "fastagent.agent")
    events = await drain(agent.invoke("s", "cut it"))
    (failed,) = [e for e in events if isinstance(e, Failed)]
    assert failed.code == "session_store_error" and failed.retryable is True, failed
    assert not any(r.exc_info for r in caplog.records) and "ExceptionGroup" not in caplog.text
