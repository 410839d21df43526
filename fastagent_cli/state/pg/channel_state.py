"""Channel state in the shared database: one row per document, one per journal entry.

:class:`PgChannelState` is the shared :class:`~fastagent_cli.state.channel_state.ChannelStateStore`:

* an append (``fastagent_channel_append``) takes the next positions under the document row's lock,
  so positions are gap-free and committed in order, and announces the new position; ``sync=False``
  commits asynchronously (the file store's "survives the process, not the machine");
* :meth:`~PgChannelState.changes` hands out what was appended after a position (the whole document
  again when a compaction dropped those entries);
* :meth:`~PgChannelState.replace` stores a snapshot *as of a position* and drops only the entries
  up to it, and never replaces a newer snapshot;
* :meth:`~PgChannelState.live_owners`: an instance is alive while its link holds its advisory
  lock (``pg_locks``), so a killed instance is dead as soon as its connection is gone.

A database that cannot be reached raises ``OSError``, which the channel kit reports as it reports
a file it cannot write (a webhook then answers 500 and the platform delivers again).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from fastagent_cli.errors import DatabaseError
from fastagent_cli.state.atomic import dumps_line
from fastagent_cli.state.channel_state import LoadedDocument, Watcher

if TYPE_CHECKING:
    from fastagent_cli.state.pg.database import Database
    from fastagent_cli.state.pg.driver import Conn

__all__ = ["PgChannelState"]

log = logging.getLogger("fastagent.channel")

T = TypeVar("T")
_DOC = """
SELECT snapshot, snapshot_position, position FROM fastagent_channel_docs
WHERE namespace = $1 AND kind = $2 AND name = $3
"""
_JOURNAL = """
SELECT position, entry FROM fastagent_channel_journal
WHERE namespace = $1 AND kind = $2 AND name = $3 AND position > $4 ORDER BY position
"""


class PgChannelState:
    def __init__(self, db: Database, kind: str) -> None:
        self.db = db
        self.kind = kind
        self._watchers: dict[str, list[Watcher]] = {}
        self._listening = False

    @property
    def owner(self) -> str | None:
        return self.db.instance

    def describe(self, name: str) -> str:
        where = f"database {self.db.settings.shown}, namespace {self.db.namespace}"
        return f"the {self.kind} channel's {name} ({where})"

    async def _run(self, what: str, work: Callable[[Conn], Awaitable[T]]) -> T:
        try:
            return await self.db.run(what, work)
        except DatabaseError as exc:
            raise OSError(exc.message) from exc

    def _keys(self, name: str) -> tuple[str, str, str]:
        return (self.db.namespace, self.kind, name)

    # --- reading --------------------------------------------------------------------------------

    async def load(self, name: str) -> LoadedDocument:
        async def read(conn: Conn) -> LoadedDocument:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                doc = await conn.fetchrow(_DOC, *self._keys(name))
                if doc is None:
                    return LoadedDocument()
                rows = await conn.fetch(_JOURNAL, *self._keys(name), doc["snapshot_position"])
            loaded = LoadedDocument(position=int(doc["position"]), reset=True)
            if doc["snapshot"] is not None:
                try:
                    loaded.snapshot = json.loads(doc["snapshot"])
                except ValueError as exc:
                    loaded.problems.append(f"{self.describe(name)}: the snapshot is not valid JSON ({exc})")
            self._journal(name, rows, loaded)
            return loaded

        return await self._run(f"read {self.describe(name)}", read)

    def _journal(self, name: str, rows: Sequence[Any], loaded: LoadedDocument) -> None:
        skipped = 0
        for row in rows:
            try:
                loaded.journal.append(json.loads(row["entry"]))
            except ValueError:
                skipped += 1
            loaded.position = max(loaded.position, int(row["position"]))
        if skipped:
            loaded.problems.append(f"{self.describe(name)}: skipped {skipped} unreadable journal entries")

    async def changes(self, name: str, after: int) -> LoadedDocument:
        async def read(conn: Conn) -> LoadedDocument | None:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                doc = await conn.fetchrow(_DOC, *self._keys(name))
                if doc is None:
                    return LoadedDocument(position=after)
                if after < doc["snapshot_position"]:
                    return None  # compacted past what the caller has: the whole document
                rows = await conn.fetch(_JOURNAL, *self._keys(name), after)
            loaded = LoadedDocument(position=after)
            self._journal(name, rows, loaded)
            return loaded

        found = await self._run(f"read {self.describe(name)}", read)
        return found if found is not None else await self.load(name)

    # --- writing --------------------------------------------------------------------------------

    async def append(self, name: str, entries: Sequence[Any], *, sync: bool = True) -> int | None:
        if not entries:
            return None
        lines = [dumps_line(entry) for entry in entries]
        position = await self._run(
            f"write {self.describe(name)}",
            lambda conn: conn.fetchval(
                "SELECT fastagent_channel_append($1, $2, $3, $4, $5, $6)",
                *self._keys(name),
                lines,
                sync,
                self.db.settings.channel("channel"),
            ),
        )
        return int(position)

    async def replace(self, name: str, snapshot: Any, *, position: int | None = None) -> None:
        async def write(conn: Conn) -> None:
            async with conn.transaction():
                at = position
                if at is None:
                    at = await conn.fetchval(
                        "SELECT position FROM fastagent_channel_docs WHERE namespace = $1 AND kind = $2 "
                        "AND name = $3 FOR UPDATE",
                        *self._keys(name),
                    )
                    at = int(at or 0)
                await conn.execute(
                    "INSERT INTO fastagent_channel_docs AS d (namespace, kind, name, snapshot, "
                    "snapshot_position, position) VALUES ($1, $2, $3, $4, $5, $5) "
                    "ON CONFLICT (namespace, kind, name) DO UPDATE "
                    "SET snapshot = EXCLUDED.snapshot, snapshot_position = EXCLUDED.snapshot_position "
                    "WHERE d.snapshot_position < EXCLUDED.snapshot_position OR d.snapshot IS NULL",
                    *self._keys(name),
                    dumps_line(snapshot),
                    at,
                )
                await conn.execute(
                    "DELETE FROM fastagent_channel_journal WHERE namespace = $1 AND kind = $2 AND name = $3 "
                    "AND position <= $4",
                    *self._keys(name),
                    at,
                )

        await self._run(f"write {self.describe(name)}", write)

    # --- other instances ------------------------------------------------------------------------

    async def watch(self, name: str, watcher: Watcher) -> None:
        self._watchers.setdefault(name, []).append(watcher)
        if not self._listening:
            self._listening = True
            await self.db.connect()
            await self.db.listener.subscribe(self.db.settings.channel("channel"), self._heard)
            self.db.listener.on_gap.append(self._gap)

    async def _heard(self, payload: str) -> None:
        try:
            note = json.loads(payload)
            kind, name, position = note["kind"], note["name"], int(note["position"])
        except (ValueError, KeyError, TypeError):
            log.warning("[channel] ignored a malformed channel-state notification: %.200s", payload)
            return
        if kind == self.kind:
            for watcher in self._watchers.get(name, ()):
                watcher(position)

    def _gap(self) -> None:
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher(None)

    async def live_owners(self, owners: Collection[str]) -> set[str]:
        try:
            return await self.db.live_instances(owners)
        except DatabaseError as exc:
            raise OSError(exc.message) from exc

    async def aclose(self) -> None:
        """Nothing of its own to close: the database belongs to the agent's state backend."""
