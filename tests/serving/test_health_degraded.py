"""During a PostgreSQL outage the real ``fastagent start`` answers ``/health`` with ``503
degraded``, logs one line when the link is lost and one when it is back (no tracebacks), and is
``ok`` again after it reconnected."""

from __future__ import annotations

import asyncio
import time

from tests.conftest import AgentFactory
from tests.pg_server import PgServer
from tests.serving.serving_proc import ServerProcess, get


async def health_becomes(port: int, wanted: tuple[int, str], within: float = 30) -> None:
    deadline = time.monotonic() + within
    while True:
        got = await get(port)
        if got == wanted:
            return
        assert time.monotonic() < deadline, f"/health still {got}, wanted {wanted}"
        await asyncio.sleep(0.2)


async def test_health_is_degraded_while_the_database_is_out(
    make_agent: AgentFactory, database_url: str, pg_server: PgServer
) -> None:
    name = database_url.rsplit("/", 1)[1]
    agent = make_agent(config='state_backend = "postgres"\n')
    env = {"FASTAGENT_DATABASE_URL": database_url}
    async with ServerProcess.spawn(
        "start", str(agent), "--port", "0", "--bind", "127.0.0.1", env=env
    ) as server:
        port = await server.port(within=60)
        assert await get(port) == (200, "ok\n")
        # the outage: nobody may connect to this database, and its connections are cut
        pg_server.psql(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        pg_server.psql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        await health_becomes(port, (503, "degraded: the state database cannot be reached\n"))
        await asyncio.sleep(2)  # reconnect attempts fail meanwhile
        pg_server.psql(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        await health_becomes(port, (200, "ok\n"))
        await server.wait_for(r"\[database\] link reconnected after")
    assert server.count(r"\[database\] lost the link to the database") == 1
    assert server.count(r"\[database\] link reconnected") == 1
    assert "Traceback" not in server.text
