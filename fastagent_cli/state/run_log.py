"""The run audit: ``<state root>/schedule/runs.jsonl``, one line per scheduled or woken turn.

A record is ``{name, session, firedAt, ms, outcome, reply?, error?, usage?}`` where ``outcome`` is
``completed``, ``failed`` or ``deferred`` and ``name`` is the schedule's, or ``wake`` for a
wake-up (whose record also carries its ``id``). ``usage`` is the turn's token and cost totals
when the agent reported them. Lines are appended whole, so a crash tears at most the last one,
which readers skip.

When the file passes :data:`ROTATE_BYTES` it is renamed to ``runs.1.jsonl`` (replacing the
previous one) and a new file starts: history stays readable without growing forever.

:class:`RunHistory` is what the scheduler and ``schedule history`` use: :class:`RunLog` on files
(its blocking IO in a worker thread), :class:`~fastagent_cli.state.pg.runs.PgRunLog` on the
database (``state_backend = "postgres"``). Both raise ``OSError`` when their storage refuses.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Protocol

from fastagent_cli.state.atomic import append_jsonl, read_jsonl

__all__ = ["ROTATE_BYTES", "RUNS_FILE", "RunHistory", "RunLog", "RunLogUnavailable"]


class RunLogUnavailable(OSError):
    """The run log's storage (the database) cannot be used now."""


class RunHistory(Protocol):
    @property
    def where(self) -> str:
        """Where the runs are kept, as shown (never a password)."""
        ...

    async def write(self, record: dict[str, Any]) -> None:
        """Record one run; OSError when the storage refuses."""
        ...

    async def read(self, name: str | None = None) -> list[dict[str, Any]]:
        """Every kept record, oldest first (``name``: only that schedule's, or ``wake``)."""
        ...


RUNS_FILE = "runs.jsonl"
ROTATED_FILE = "runs.1.jsonl"
ROTATE_BYTES = 8 * 1024 * 1024


class RunLog:
    def __init__(self, directory: Path, rotate_bytes: int = ROTATE_BYTES) -> None:
        self.directory = Path(directory)
        self.rotate_bytes = rotate_bytes

    @property
    def path(self) -> Path:
        return self.directory / RUNS_FILE

    @property
    def where(self) -> str:
        return str(self.path)

    async def write(self, record: dict[str, Any]) -> None:
        await asyncio.to_thread(self.append, record)

    async def read(self, name: str | None = None) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.records, name)

    def append(self, record: dict[str, Any]) -> None:
        """Append one record (creating the directory); OSError when the disk refuses."""
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            if self.path.stat().st_size >= self.rotate_bytes:
                os.replace(self.path, self.directory / ROTATED_FILE)
        except FileNotFoundError:
            pass
        append_jsonl(self.path, [record])

    def records(self, name: str | None = None) -> list[dict[str, Any]]:
        """Every readable record, oldest first (``name``: only that schedule's, or ``wake``)."""
        out: list[dict[str, Any]] = []
        for path in (self.directory / ROTATED_FILE, self.path):
            try:
                out.extend(r for r in read_jsonl(path) if name is None or r.get("name") == name)
            except FileNotFoundError:
                continue
        return out
