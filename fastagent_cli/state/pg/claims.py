"""Schedule claims in the shared database: a slot fires once across every instance.

* **Fired slots** (``fastagent_fires``): claiming is one ``INSERT ... ON CONFLICT DO UPDATE ...
  WHERE fired_at < slot``, so of the instances that reach a slot together exactly one gets the
  row back and runs the turn; the others see the slot claimed.
* **Wake-ups** (``fastagent_wakeups``): the stored form is the file backend's JSON (``body``),
  with the session and ``fireAt`` in columns for the queries. ``take_due_wakeup`` locks the first
  due row with ``FOR UPDATE SKIP LOCKED`` and removes or advances it in the same transaction, so
  two instances polling together never take the same occurrence. ``add_wakeup`` counts a
  session's pending wake-ups under a transaction-level advisory lock on that session.

A database that cannot be reached raises :class:`~fastagent_cli.state.wakeup.ClaimsUnavailable`
(an ``OSError``), which the scheduler treats as the file backend's storage faults.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from fastagent_cli.errors import DatabaseError
from fastagent_cli.state.cron import next_after
from fastagent_cli.state.pg.settings import advisory_key
from fastagent_cli.state.wakeup import ClaimsUnavailable, TooManyWakeups, Wakeup

if TYPE_CHECKING:
    from fastagent_cli.state.pg.database import Database
    from fastagent_cli.state.pg.driver import Conn

__all__ = ["PgClaims"]

log = logging.getLogger("fastagent.schedule")

T = TypeVar("T")

_CLAIM = """
INSERT INTO fastagent_fires AS f (namespace, schedule, fired_at) VALUES ($1, $2, $4)
ON CONFLICT (namespace, schedule) DO UPDATE SET fired_at = EXCLUDED.fired_at WHERE f.fired_at < $3
RETURNING 1
"""
_WAKEUPS = "SELECT id, body FROM fastagent_wakeups WHERE namespace = $1 ORDER BY ord"
_DUE = """
SELECT id, body FROM fastagent_wakeups WHERE namespace = $1 AND fire_at <= $2
ORDER BY ord LIMIT 1 FOR UPDATE SKIP LOCKED
"""
_PUT = """
INSERT INTO fastagent_wakeups (namespace, id, session, body, fire_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (namespace, id) DO UPDATE SET session = EXCLUDED.session, body = EXCLUDED.body,
    fire_at = EXCLUDED.fire_at, ord = nextval('fastagent_wakeup_order')
"""


class PgClaims:
    """:class:`~fastagent_cli.state.claims.ScheduleClaims` on the shared database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.namespace = db.namespace

    async def _run(self, work: Callable[[Conn], Awaitable[T]]) -> T:
        try:
            return await self.db.run("use the schedule claims", work)
        except DatabaseError as exc:
            raise ClaimsUnavailable(exc.message) from exc

    async def last_fired(self) -> dict[str, datetime]:
        rows = await self._run(
            lambda conn: conn.fetch(
                "SELECT schedule, fired_at FROM fastagent_fires WHERE namespace = $1", self.namespace
            )
        )
        return {row["schedule"]: row["fired_at"] for row in rows}

    async def claim_slot(self, name: str, slot: datetime, at: datetime) -> bool:
        row = await self._run(lambda conn: conn.fetchval(_CLAIM, self.namespace, name, slot, max(at, slot)))
        return row is not None

    async def wakeups(self) -> list[Wakeup]:
        rows = await self._run(lambda conn: conn.fetch(_WAKEUPS, self.namespace))
        return [w for w in (self._parse(row["id"], row["body"]) for row in rows) if w is not None]

    def _parse(self, wake_id: str, body: str) -> Wakeup | None:
        try:
            return Wakeup.from_json(json.loads(body))
        except ValueError as exc:
            log.warning("[schedule] dropping a malformed wake-up %s (%s)", wake_id, exc)
            return None

    async def add_wakeup(self, wakeup: Wakeup, *, limit: int) -> None:
        async def add(conn: Conn) -> list[Wakeup] | None:
            async with conn.transaction():
                key = advisory_key(self.namespace, "wakeups", wakeup.session)
                await conn.execute("SELECT pg_advisory_xact_lock($1)", key)
                rows = await conn.fetch(
                    "SELECT id, body FROM fastagent_wakeups WHERE namespace = $1 AND session = $2 "
                    "ORDER BY ord",
                    self.namespace,
                    wakeup.session,
                )
                if len(rows) >= limit:
                    return [w for w in (self._parse(r["id"], r["body"]) for r in rows) if w is not None]
                await self._put(conn, wakeup)
                return None

        pending = await self._run(add)
        if pending is not None:
            raise TooManyWakeups(limit, pending)

    async def _put(self, conn: Conn, wakeup: Wakeup) -> None:
        await conn.execute(_PUT, self.namespace, wakeup.id, wakeup.session, _body(wakeup), wakeup.fire_at)

    async def remove_wakeup(self, wake_id: str, *, session: str | None = None) -> bool:
        row = await self._run(
            lambda conn: conn.fetchval(
                "DELETE FROM fastagent_wakeups WHERE namespace = $1 AND id = $2 "
                "AND ($3::text IS NULL OR session = $3) RETURNING 1",
                self.namespace,
                wake_id,
                session,
            )
        )
        return row is not None

    async def take_due_wakeup(self, now: datetime) -> Wakeup | None:
        async def take(conn: Conn) -> Wakeup | None:
            async with conn.transaction():
                while True:
                    row = await conn.fetchrow(_DUE, self.namespace, now)
                    if row is None:
                        return None
                    due = self._parse(row["id"], row["body"])
                    following = next_after(due.cron, due.tz or "UTC", now) if due and due.cron else None
                    if due is not None and following is not None:  # recurring: advance it in place
                        advanced = replace(due, fire_at=following, attempts=0)
                        await conn.execute(
                            "UPDATE fastagent_wakeups SET body = $3, fire_at = $4 "
                            "WHERE namespace = $1 AND id = $2",
                            self.namespace,
                            due.id,
                            _body(advanced),
                            following,
                        )
                        return due
                    await conn.execute(
                        "DELETE FROM fastagent_wakeups WHERE namespace = $1 AND id = $2",
                        self.namespace,
                        row["id"],
                    )
                    if due is not None:
                        return due

        return await self._run(take)

    async def put_wakeup(self, wakeup: Wakeup) -> None:
        async def put(conn: Conn) -> None:
            await self._put(conn, wakeup)

        await self._run(put)


def _body(wakeup: Wakeup) -> str:
    return json.dumps(wakeup.to_json(), ensure_ascii=False, separators=(",", ":"))
