"""One round trip of the link: entry lines, the summaries they change, announcements and lease
releases, as one ``fastagent_write(...)`` call (one transaction).

Entry lines of one record keep their order and stay together; announcements queued on one
channel are packed into as few notifications as fit (``{"i": <instance>, "e": [...]}``, under
PostgreSQL's 8000-byte payload limit; a single larger one is spilled to a table by the SQL
function); releases run last, after the writes they follow. If the server refuses the batch for
a reason other than a lost connection (a record deleted meanwhile, two writers on one record),
each record's writes are retried on their own so only the culprit fails.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastagent_cli.errors import DatabaseError
from fastagent_cli.state.pg.driver import is_connection_loss, reason

if TYPE_CHECKING:
    import asyncpg

__all__ = ["PAYLOAD_LIMIT", "Batch", "EntryWrite", "Notify", "Unlock"]

log = logging.getLogger("fastagent.database")

PAYLOAD_LIMIT = 7800
"""Bytes packed into one notification (PostgreSQL refuses payloads of 8000 bytes and more)."""
_SQL = "SELECT fastagent_write($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"


@dataclass(slots=True)
class EntryWrite:
    """Lines appended to one record, ``seq`` the first one's number."""

    rid: int
    seq: int
    lines: list[str]
    epoch: int | None
    """The lease's epoch (``None``: written without a lease, unfenced)."""
    messages: int = 0
    first_prompt: str | None = None
    name: str | None = None
    sync: bool = True
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@dataclass(slots=True)
class Notify:
    channel: str
    item: str
    """One JSON value."""


@dataclass(slots=True)
class Unlock:
    key: int
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    """Settles once the lock is free for others (released, or gone with its connection)."""


@dataclass(slots=True)
class _Args:
    e_rid: list[int] = field(default_factory=list)
    e_seq: list[int] = field(default_factory=list)
    e_line: list[str] = field(default_factory=list)
    summary: dict[int, list[Any]] = field(default_factory=dict)
    """rid -> [lines, messages, first prompt, name]"""
    n_channel: list[str] = field(default_factory=list)
    n_payload: list[str] = field(default_factory=list)
    u_key: list[int] = field(default_factory=list)


class Batch:
    def __init__(self, instance: str, items: Sequence[EntryWrite | Notify | Unlock]) -> None:
        self.instance = instance
        self.items = list(items)

    def _writes(self) -> list[EntryWrite]:
        return [item for item in self.items if isinstance(item, EntryWrite)]

    async def run(self, conn: asyncpg.Connection, epoch: int) -> None:
        """Send the batch; connection losses propagate (the link handles them)."""
        stale = [w for w in self._writes() if w.epoch is not None and w.epoch != epoch]
        for write in stale:
            write.done.set_exception(
                DatabaseError("the session's lease went with a lost database connection", retryable=True)
            )
        gone = {id(write) for write in stale}
        items = [item for item in self.items if id(item) not in gone]
        try:
            await self._send(conn, items)
        except Exception as exc:
            if is_connection_loss(exc):
                raise
            await self._one_by_one(conn, items, exc)
            return
        _settle(items)

    async def _send(self, conn: asyncpg.Connection, items: Sequence[EntryWrite | Notify | Unlock]) -> None:
        args = _Args()
        sync = False
        notes: list[Notify] = []
        for item in items:
            if isinstance(item, EntryWrite):
                sync = sync or item.sync
                _add_write(args, item)
            elif isinstance(item, Notify):
                notes.append(item)
            else:
                args.u_key.append(item.key)
        for channel, payload in _pack(self.instance, notes):
            args.n_channel.append(channel)
            args.n_payload.append(payload)
        rids = list(args.summary)
        columns = list(zip(*args.summary.values(), strict=True)) if rids else [(), (), (), ()]
        await conn.execute(
            _SQL,
            sync,
            args.e_rid,
            args.e_seq,
            args.e_line,
            rids,
            list(columns[0]),
            list(columns[1]),
            list(columns[2]),
            list(columns[3]),
            args.n_channel,
            args.n_payload,
            self.instance,
            args.u_key,
        )

    async def _one_by_one(
        self, conn: asyncpg.Connection, items: list[EntryWrite | Notify | Unlock], first: Exception
    ) -> None:
        log.debug("[database] a batch was refused (%s); retrying record by record", reason(first))
        groups: dict[int, list[EntryWrite]] = {}
        rest: list[EntryWrite | Notify | Unlock] = []
        for item in items:
            if isinstance(item, EntryWrite):
                groups.setdefault(item.rid, []).append(item)
            else:
                rest.append(item)
        for group in groups.values():
            try:
                await self._send(conn, group)
            except Exception as exc:
                if is_connection_loss(exc):
                    raise
                error = DatabaseError(f"cannot write the session record: {reason(exc)}", retryable=False)
                for write in group:
                    if not write.done.done():
                        write.done.set_exception(error)
                continue
            _settle(group)
        if rest:
            try:
                await self._send(conn, rest)
            except Exception as exc:
                if is_connection_loss(exc):
                    raise
                log.error("[database] announcements and releases were refused: %s", reason(exc))
            _settle([item for item in rest if isinstance(item, Unlock)])


def _add_write(args: _Args, write: EntryWrite) -> None:
    for offset, line in enumerate(write.lines):
        args.e_rid.append(write.rid)
        args.e_seq.append(write.seq + offset)
        args.e_line.append(line)
    summary = args.summary.setdefault(write.rid, [0, 0, None, None])
    summary[0] += len(write.lines)
    summary[1] += write.messages
    if summary[2] is None:
        summary[2] = write.first_prompt
    if write.name is not None:
        summary[3] = write.name


def _pack(instance: str, notes: Sequence[Notify]) -> list[tuple[str, str]]:
    """``(channel, payload)`` pairs, consecutive items of one channel sharing a payload."""
    head = f'{{"i":"{instance}","e":['
    out: list[tuple[str, str]] = []
    channel: str | None = None
    parts: list[str] = []
    size = 0

    def close() -> None:
        if channel is not None and parts:
            out.append((channel, head + ",".join(parts) + "]}"))

    for note in notes:
        length = len(note.item.encode("utf-8")) + 1
        if note.channel != channel or (parts and size + length > PAYLOAD_LIMIT):
            close()
            channel, parts, size = note.channel, [], len(head) + 2
        parts.append(note.item)
        size += length
    close()
    return out


def _settle(items: Sequence[EntryWrite | Notify | Unlock]) -> None:
    for item in items:
        if isinstance(item, EntryWrite | Unlock) and not item.done.done():
            item.done.set_result(None)
