"""The run audit: ``<state root>/schedule/runs.jsonl``, one line per scheduled or woken turn.

A record is ``{name, session, firedAt, ms, outcome, reply?, error?, usage?}`` where ``outcome`` is
``completed``, ``failed`` or ``deferred`` and ``name`` is the schedule's, or ``wake`` for a
wake-up (whose record also carries its ``id``). ``usage`` is the turn's token and cost totals
when the agent reported them. Lines are appended whole, so a crash tears at most the last one,
which readers skip.

When the file passes :data:`ROTATE_BYTES` it is renamed to ``runs.1.jsonl`` (replacing the
previous one) and a new file starts: history stays readable without growing forever.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastagent_cli.state.atomic import append_jsonl, read_jsonl

__all__ = ["ROTATE_BYTES", "RUNS_FILE", "RunLog"]

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
